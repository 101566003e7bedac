import EmbeddedPostgres
import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

/// `ledger digest-key generate`, `ledger digest` and `ledger audit` as an operator and an auditor
/// run them: a digest saved, then a superuser's edit that `ledger verify` cannot see (the stream
/// re-chained) caught by the audit against it; a digest checked with a key that did not sign it
/// refused, naming the key.
@Suite(.takingTurns) struct ProofCommandTests {
    @Test func aSavedDigestCatchesAnEditThatVerifyDoesNotSee() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 1, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        for n in 1...4 { try await store.append([testEvent(data: #"{"n": \#(n)}"#)], to: "user-7") }
        for n in 1...2 { try await store.append([testEvent(data: #"{"m": \#(n)}"#)], to: "user-8") }
        await pool.close()
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-proofs-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (key, other, saved) = (
            folder.appendingPathComponent("digest.pem").path, folder.appendingPathComponent("other.pem").path,
            folder.appendingPathComponent("old.json").path
        )
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = configuration.connectionString
        environment.removeValue(forKey: "LEDGER_DIGEST_KEY_FILE")
        func ledger(_ arguments: [String]) async throws -> ChildProcess.Outcome {
            try await ChildProcess.run(LedgerCommandTests.ledgerBinary, arguments, environment: environment)
        }

        let generated = try await ledger(["digest-key", "generate", "--out", key])
        #expect(generated.status == 0 && generated.output.contains("digest key"), "\(generated.output)")
        #expect((try FileManager.default.attributesOfItem(atPath: key))[.posixPermissions] as? Int == 0o600)
        #expect(try await ledger(["digest-key", "generate", "--out", key]).status != 0, "a key is never overwritten")
        #expect(try await ledger(["digest"]).output.contains("LEDGER_DIGEST_KEY_FILE"), "no key: the command says which setting")

        let digest = try await ledger(["digest", "--key-file", key])
        #expect(digest.status == 0, "\(digest.output)")
        let json = try #require(digest.output.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init))
        #expect(json.contains(#""tree_size":6"#), "\(json)")
        try Data(json.utf8).write(to: URL(fileURLWithPath: saved))
        let clean = try await ledger(["audit", "--digest", saved, "--key-file", key])
        #expect(clean.status == 0 && clean.output.contains("the log extends the digest"), "\(clean.output)")

        // The superuser edits version 2 of user-7 and re-chains the stream: verify is satisfied.
        let superuser = try PostgresConnection.connect(TestCluster.superuser(configuration))
        try superuser.execute(
            script: """
                SET session_replication_role = replica;
                UPDATE ledger.events SET data = '{"n": 99}' WHERE stream = 'user-7' AND version = 2;
                \(HostileEdits.rechainSQL("user-7"));
                """)
        #expect(try await ledger(["verify"]).status == 0, "the chain was recomputed: verify sees nothing")
        let caught = try await ledger(["audit", "--digest", saved, "--key-file", key])
        #expect(caught.status == 1, "\(caught.output)")
        #expect(caught.output.contains("first broken: position") && caught.output.contains("stream user-7, version 2"), "\(caught.output)")

        #expect(try await ledger(["digest-key", "generate", "--out", other]).status == 0)
        let stranger = try await ledger(["audit", "--digest", saved, "--key-file", other])
        #expect(stranger.status != 0 && stranger.output.contains("not among the keys"), "\(stranger.output)")
    }
}
