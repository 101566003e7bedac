import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerTestSupport
import Logging
import Testing

/// The private cluster newcomers and tests run on: initialised once, started by whoever finds it
/// stopped, left to its owner when another process started it, and its data kept across restarts.
@Suite struct EmbeddedPostgresTests {
    @Test func aClusterIsMadeOnceStartedByOneOwnerAndKeepsItsDataAcrossARestart() async throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "ledger-embedded-\(getpid())-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(dataDirectory: folder, options: .init(durable: false), logger: Logger(label: "embedded-test"))
        defer {
            try? cluster.stop(mode: "immediate")
            try? FileManager.default.removeItem(at: folder)
        }
        #expect(try await cluster.start(), "this call initialised and started it")
        #expect(try await cluster.start() == false, "a running cluster is another owner's: not started twice")
        try await offThePool { try cluster.createDatabase("kept") }
        try PostgresConnection.connect(cluster.configuration(database: "kept")).execute(
            script: "CREATE TABLE t (v int); INSERT INTO t VALUES (42)")

        try await cluster.stop()
        #expect(cluster.isRunning() == false)
        #expect(try await cluster.start())
        let again = try PostgresConnection.connect(cluster.configuration(database: "kept"))
        #expect(try again.query("SELECT v FROM t")[0]["v"].int() == 42)
    }
}
