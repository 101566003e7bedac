import ArgumentParser
import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerPostgres
import LedgerSchema

/// `ledger keys create|list|revoke`: API keys for game servers, support tools and finance.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Create, list and revoke API keys.",
        discussion: """
            Scopes: read (user state, audit trail, catalogue), ingest (transactions, receipts, consumptions),
            finance (exports), admin (app and product configuration, promotional grants; implies the others).
            Only a SHA-256 of each key is stored: a key is shown once, when created.
            """,
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a key and print it once (the last line of stdout).",
            discussion: "Example: ledger keys create --name game-server --scopes read,ingest --app com.example.game")

        @OptionGroup var database: DatabaseOptions
        @Option(help: "A name to recognise the key by (unique names make revoking by name easy).") var name: String
        @Option(help: ArgumentHelp("Comma-separated scopes: read, ingest, finance, admin.", valueName: "scopes")) var scopes: String
        @Option(help: ArgumentHelp("Limit the key to one app (bundle id); default: every app.", valueName: "bundle-id")) var app: String?
        @Option(
            help: ArgumentHelp(
                "Requests a second the key may make, e.g. 50/s (a second's worth at once); default: no limit.", valueName: "N/s"))
        var rateLimit: String?

        func run() async throws {
            let parsed = try scopes.split(separator: ",").map { name in
                guard let scope = Scope(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                    throw ValidationError("unknown scope \(name); use read, ingest, finance, admin")
                }
                return scope
            }
            let (name, app) = (self.name, self.app)
            let rate = try rateLimit.map { text in
                let number = text.hasSuffix("/s") ? String(text.dropLast(2)) : text
                guard let rate = Double(number), rate > 0, rate.isFinite else {
                    throw ValidationError("--rate-limit is requests a second, e.g. 50/s")
                }
                return rate
            }
            let (key, secret) = try await withKeys { keys, audit in
                let (key, secret) = try await keys.create(name: name, scopes: Set(parsed), bundleID: app, rateLimit: rate)
                struct Created: Encodable {
                    var id: String; var name: String; var prefix: String; var scopes: [String]; var app: String?; var rate_limit: Double?
                }
                try await KeysCommand.record(
                    audit, "key.created", key: key.name, bundleID: app,
                    after: Created(
                        id: key.id.uuidString.lowercased(), name: key.name, prefix: key.prefix, scopes: key.scopes.map(\.rawValue).sorted(),
                        app: app,
                        rate_limit: rate))
                return (key, secret)
            }
            print(
                "created key \(key.name) (\(key.id)) with scopes \(key.scopes.map(\.rawValue).sorted().joined(separator: ","))"
                    + (key.bundleID.map { " for \($0)" } ?? " for every app") + ". It is shown only now:")
            print(secret)
        }

        func withKeys<T: Sendable>(_ body: @Sendable (APIKeyStore, AuditLog) async throws -> T) async throws -> T {
            try await KeysCommand.withKeys(database, body)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List keys (never the keys themselves).")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let keys = try await KeysCommand.withKeys(database) { keys, _ in try await keys.list() }
            print("id\tname\tprefix\tscopes\tapp\tcreated\tstatus\trate limit")
            for key in keys {
                print(
                    [
                        key.id.uuidString.lowercased(), key.name, key.prefix + "…",
                        key.scopes.map(\.rawValue).sorted().joined(separator: ","),
                        key.bundleID ?? "*", key.createdAt.formatted(.iso8601), key.revokedAt == nil ? "active" : "revoked",
                        key.rateLimit.map { String(format: "%g/s", $0) } ?? "-",
                    ].joined(separator: "\t"))
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a key by id, name or prefix.",
            discussion: "Servers stop accepting it within their key cache time (2 s). Exit status 1 when nothing matched.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The key's id, name or prefix.") var key: String

        func run() async throws {
            let key = self.key
            let count = try await KeysCommand.withKeys(database) { keys, audit in
                let count = try await keys.revoke(key)
                if count > 0 { try await KeysCommand.record(audit, "key.revoked", key: key, bundleID: nil, after: ["revoked": count]) }
                return count
            }
            guard count > 0 else {
                print("no active key matches \(key)")
                throw ExitCode(1)
            }
            print("revoked \(count) key\(count == 1 ? "" : "s")")
        }
    }

    /// Records what the command did to the keys in the audit log, as the API records admin actions:
    /// the actor is the command and the operating-system user who ran it.
    static func record(_ audit: AuditLog, _ action: String, key: String, bundleID: String?, after: some Encodable) async throws {
        try await audit.record(
            actor: "ledger keys (\(ProcessInfo.processInfo.userName))", keyID: nil, requestID: "cli-" + UUID().uuidString.lowercased(),
            action: action,
            target: "keys/\(key)", bundleID: bundleID, before: nil, after: AuditLog.json(after))
    }

    /// Opens the database (migrating it: a first command may be `keys create`) for one call.
    static func withKeys<T: Sendable>(
        _ database: DatabaseOptions, _ body: @Sendable (APIKeyStore, AuditLog) async throws -> T
    ) async throws -> T {
        let logger = LoggingSetup.logger("ledger.keys")
        return try await database.withDatabase(logger: logger) { opened, _ in
            let pool = PostgresPool(configuration: opened.application, size: 1, logger: logger)
            do {
                let result = try await whilePostgres("using the API keys table") {
                    try await body(APIKeyStore(pool: pool), AuditLog(pool: pool))
                }
                await pool.close()
                return result
            } catch {
                await pool.close()
                throw error
            }
        }
    }
}
