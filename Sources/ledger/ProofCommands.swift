import ArgumentParser
import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProofs
import Logging

/// `ledger digest`: the log's Merkle tree brought up to date and its size and root signed with the
/// digest key — the JSON an auditor saves, and later hands to `ledger audit --digest`.
struct DigestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest",
        abstract: "Print a signed digest of the whole log: {\"tree_size\", \"root_hash\", \"signed_at\", \"jws\"}.",
        discussion:
            "Signed with the PEM key of --key-file (env LEDGER_DIGEST_KEY_FILE). Save the output where the database's writers cannot reach it."
    )

    @OptionGroup var database: DatabaseOptions
    @Option(help: "The digest key (PEM P-256), instead of LEDGER_DIGEST_KEY_FILE.") var keyFile: String?

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.digest")
        guard let path = try keyFile ?? database.settings.digestKeyFile else {
            throw ValidationError(
                "no digest key: set LEDGER_DIGEST_KEY_FILE or pass --key-file (make one with `ledger digest-key generate`)")
        }
        let key = try DigestKey(contentsOf: path)
        try await database.withDatabase(logger: logger) { opened, _ in
            let pool = PostgresPool(configuration: opened.owner, size: 1, logger: logger)
            let desk = ProofDesk(tree: ProofTree(pool: pool, logger: logger), key: key)
            let signed = await Result { () async throws -> Digest in
                try await desk.tree.catchUp()
                return try await desk.digest()
            }
            await pool.close()
            print(try signed.get().json)
        }
    }
}

/// `ledger digest-key generate`: a new digest key, PEM, written with mode 0600.
struct DigestKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest-key", abstract: "Make the key digests are signed with.", subcommands: [Generate.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new PEM P-256 private key to --out (mode 0600) and print its key id.")

        @Option(help: "Where to write the key; an existing file is never overwritten.") var out: String

        func run() throws {
            guard !FileManager.default.fileExists(atPath: out) else {
                throw ValidationError("\(out) exists; digest keys are never overwritten (a digest signed by it could no longer be checked)")
            }
            let pem = DigestKey.generate()
            guard FileManager.default.createFile(atPath: out, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ValidationError("cannot write \(out)")
            }
            print("digest key \(try DigestKey(pem: pem).publicKey.keyID) written to \(out); set LEDGER_DIGEST_KEY_FILE=\(out)")
        }
    }
}

/// `ledger audit --digest old.json`: checks that today's log extends a digest saved before, from
/// the events themselves, and names the first event that does not.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Check that the log extends a saved digest, recomputing every leaf from its event.",
        discussion: """
            The digest's signature is checked with the JWK Set of --keys (as GET /v1/ledger/digest-keys answers it) or the \
            public half of the digest key (--key-file, env LEDGER_DIGEST_KEY_FILE). Exit status 0 when the log extends the \
            digest and every event matches its leaf, 1 otherwise.
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: "A digest saved before (the JSON `ledger digest` or GET /v1/ledger/digest answered).") var digest: String
    @Option(help: "A JWK Set file with the keys the digest may be signed by.") var keys: String?
    @Option(help: "The digest key (PEM P-256), instead of LEDGER_DIGEST_KEY_FILE.") var keyFile: String?

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.audit")
        guard let data = FileManager.default.contents(atPath: digest) else { throw ValidationError("cannot read \(digest)") }
        guard let saved = try? JSONDecoder().decode(Digest.self, from: data) else {
            throw ValidationError("\(digest) is not a digest: {\"tree_size\", \"root_hash\", \"signed_at\", \"jws\"}")
        }
        let trusted = try trustedKeys()
        let report = try await database.withDatabase(logger: logger) { opened, _ in
            let pool = PostgresPool(configuration: opened.owner, size: 1, logger: logger)
            let audited = await Result { () async throws -> ProofAudit.Report in
                try await ProofTree(pool: pool, logger: logger).catchUp()
                return try await ProofAudit(pool: pool).audit(saved, keys: trusted)
            }
            await pool.close()
            do { return try audited.get() } catch let error as LedgerError { throw ValidationError(error.message) }
        }
        print("digest: \(report.digestSize) leaves; the tree now: \(report.treeSize) leaves")
        print("checked \(report.leavesChecked) leaves against their events (\(report.leavesErased) erased, taken as stored)")
        print(
            report.extendsDigest
                ? "the log extends the digest"
                : "the log does NOT extend the digest: its first \(report.digestSize) leaves have another root")
        print(report.matchesStoredTree ? "the stored tree matches the events" : "the stored tree does NOT match the events")
        if let broken = report.firstBroken { print("first broken: \(broken)") }
        if !report.passed { throw ExitCode(1) }
    }

    private func trustedKeys() throws -> [DigestPublicKey] {
        if let keys {
            guard let data = FileManager.default.contents(atPath: keys) else { throw ValidationError("cannot read \(keys)") }
            do { return try DigestPublicKey.keys(fromKeySet: data) } catch let error as LedgerError { throw ValidationError(error.message) }
        }
        guard let path = try keyFile ?? database.settings.digestKeyFile else {
            throw ValidationError("no key to check the digest with: pass --keys (a JWK Set) or --key-file, or set LEDGER_DIGEST_KEY_FILE")
        }
        return [try DigestKey(contentsOf: path).publicKey]
    }
}
