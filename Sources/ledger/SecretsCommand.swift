import ArgumentParser
import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerSecrets
import Logging

/// `ledger secrets`: a new key, and moving the stored secrets from one key to another while the
/// servers run.
struct SecretsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secrets",
        abstract: "Make a secrets key, or move the stored secrets to a new one.",
        subcommands: [Generate.self, Rotate.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new random key for LEDGER_SECRETS_KEY (base64 of 32 bytes).")

        func run() {
            print(SecretsKey.generate())
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal every stored secret under the new key too, or (--finish) under the current key alone.",
            discussion: """
                Step 1, with LEDGER_SECRETS_KEY=<old> and LEDGER_SECRETS_NEW_KEY=<new>: every secret is sealed under both keys, \
                so servers holding either keep working. Step 2: restart the servers with LEDGER_SECRETS_KEY=<new>. \
                Step 3, with LEDGER_SECRETS_KEY=<new> (LEDGER_SECRETS_NEW_KEY may still name the old key): --finish seals every \
                secret under the new key alone and forgets the old one. docs/deployment.md has the whole procedure.
                """)

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Seal under LEDGER_SECRETS_KEY alone and forget every other key.")
        var finish = false

        func run() async throws {
            let logger = LoggingSetup.logger("ledger.secrets")
            let settings = try database.settings
            guard finish || settings.newSecretsKey != nil else {
                throw ValidationError(
                    "a rotation needs the new key: set LEDGER_SECRETS_NEW_KEY (or LEDGER_SECRETS_NEW_KEY_FILE); `ledger secrets generate` makes one"
                )
            }
            let finish = finish
            let report = try await database.withDatabase(logger: logger) { opened, _ in
                let vault = SecretVault(keyring: try SecretsKeys.keyring(settings, for: opened, logger: logger))
                let report = try whilePostgres("connecting to \(opened.owner)") {
                    let connection = try PostgresConnection.connect(opened.application)
                    return try finish ? vault.finish(connection) : vault.rotate(connection)
                }
                try await Self.record(report, finishing: finish, on: opened, logger: logger)
                return report
            }
            let keys = report.listed.isEmpty ? "" : "; key \(report.listed.joined(separator: ", ")) added"
            let dropped = report.dropped.isEmpty ? "" : "; key \(report.dropped.joined(separator: ", ")) forgotten"
            print("sealed \(report.resealed) secret(s) again (\(report.sealed) found in clear)\(keys)\(dropped)")
        }

        /// The rotation in the audit log, as the API records admin actions: key ids and counts
        /// (never a key), the actor the command and the operating-system user who ran it.
        static func record(_ report: SecretVault.Report, finishing: Bool, on database: Database, logger: Logger) async throws {
            struct Rotation: Encodable {
                var resealed: Int
                var keys_added: [String]
                var keys_forgotten: [String]
            }
            let pool = PostgresPool(configuration: database.application, size: 1, logger: logger)
            do {
                try await AuditLog(pool: pool).record(
                    actor: "ledger secrets (\(ProcessInfo.processInfo.userName))", keyID: nil,
                    requestID: "cli-" + UUID().uuidString.lowercased(),
                    action: finishing ? "secrets.rotate.finish" : "secrets.rotate", target: "secrets", bundleID: nil, before: nil,
                    after: AuditLog.json(Rotation(resealed: report.resealed, keys_added: report.listed, keys_forgotten: report.dropped)))
                await pool.close()
            } catch {
                await pool.close()
                throw error
            }
        }
    }
}

/// The keys a command seals and opens stored secrets with: `LEDGER_SECRETS_KEY` (and, during a
/// rotation, `LEDGER_SECRETS_NEW_KEY`); for the embedded cluster, a key made on first use beside it.
enum SecretsKeys {
    /// The embedded cluster's key: in the working directory's `.ledger/`, never inside the data
    /// folder, so a copy of the database is not a copy of its key.
    static var embeddedKeyFile: URL {
        URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".ledger/secrets.key")
    }

    static func keyring(_ settings: Configuration, for database: Database, logger: Logger) throws -> Keyring {
        let current: SecretsKey
        if let key = settings.secretsKey {
            current = key
        } else if database.embedded != nil {
            current = try embeddedKey(logger: logger)
        } else {
            throw SecretsSetupError(
                "LEDGER_SECRETS_KEY is not set. With LEDGER_DATABASE_URL the ledger seals the secrets it stores (shared secrets, "
                    + "In-App Purchase keys, webhook secrets) with a key only the servers hold: set LEDGER_SECRETS_KEY to base64 of 32 random "
                    + "bytes (`ledger secrets generate` prints one), or LEDGER_SECRETS_KEY_FILE to a file holding it. Keep it apart from the "
                    + "database's backups (docs/deployment.md).")
        }
        return Keyring([current] + (settings.newSecretsKey.map { [$0] } ?? []))
    }

    /// Checks the keys against the database and seals what is still stored in clear; a wrong key
    /// stops the command here, in a sentence naming the setting.
    static func prepare(_ keyring: Keyring, on database: Database, logger: Logger) throws {
        let report = try whilePostgres("connecting to \(database.owner)") {
            try SecretVault(keyring: keyring).prepare(PostgresConnection.connect(database.application))
        }
        if !report.listed.isEmpty { logger.notice("stored secrets are sealed under key \(report.listed.joined(separator: " and "))") }
        if report.sealed > 0 { logger.notice("sealed \(report.sealed) secret(s) that were stored in clear") }
    }

    /// Reads the embedded key, or makes it: written aside and linked into place, so two commands
    /// starting at once agree on one key.
    private static func embeddedKey(logger: Logger) throws -> SecretsKey {
        let file = embeddedKeyFile
        let manager = FileManager.default
        if !manager.fileExists(atPath: file.path) {
            try manager.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            let draft = file.deletingLastPathComponent().appendingPathComponent(".secrets.key.\(UUID().uuidString)")
            guard
                manager.createFile(
                    atPath: draft.path, contents: Data((SecretsKey.generate() + "\n").utf8), attributes: [.posixPermissions: 0o600])
            else { throw SecretsSetupError("cannot write \(draft.path): set LEDGER_SECRETS_KEY instead") }
            defer { try? manager.removeItem(at: draft) }
            if link(draft.path, file.path) == 0 {
                logger.notice(
                    "made a secrets key for the embedded database in \(file.path) (keep it: the stored secrets open only with it)")
            }
        }
        do { return try SecretsKey(file: file) } catch {
            throw SecretsSetupError(
                "\(file.path) does not hold a usable key: \(error). Set LEDGER_SECRETS_KEY to the key the database was set up with.")
        }
    }
}

/// A setup problem, said as what to do.
struct SecretsSetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
