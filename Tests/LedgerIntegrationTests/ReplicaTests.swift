import AppStoreSimulator
import EmbeddedPostgres
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerFormats
import LedgerHTTP
import LedgerPostgres
import LedgerProjections
import LedgerServer
import LedgerTestSupport
import NIOHTTP1
import Testing

/// Reads served by a real streaming standby (`pg_basebackup -R`, started here beside its primary):
/// a read that follows a write its client saw answered reflects it on any server and any node;
/// with the primary down reads go on (200) and writes answer 503 until it is back.
@Suite(.serialized, .takingTurns) struct ReplicaTests {
    static let bundle = TestServer.bundleID

    static func purchase(_ server: TestServer, user: String, key: String) async throws -> TestServer.Answer {
        let jws = try server.app.signedTransaction(IngestionFlowTests.subscription("rep-\(user)", days: 30, startedAgo: 60))
        return try await server.send(
            "POST", "/v1/apps/\(bundle)/transactions", key: key, json: ["user_id": user, "signed_transaction": jws])
    }

    static func isPro(_ answer: TestServer.Answer) -> Bool {
        ((answer.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable])?["active"] as? Bool == true
    }

    static func superuser(_ cluster: EmbeddedPostgres) throws -> PostgresConnection {
        try PostgresConnection.connect(cluster.configuration(database: "postgres"))
    }

    @Test func aReadAfterAWriteReflectsItOnAnotherServerReadingAReplica() async throws {
        let (primary, standby) = try await TestCluster.primaryWithStandby()
        let writer = try await TestServer.start(cluster: primary, replicas: [standby])
        // The reader runs no projection worker: its cache holds only what it read, so its reads are the replica's.
        let reader = try await TestServer.start(
            configure: false, sharing: writer, projecting: false, replicas: [standby],
            replicaWait: .milliseconds(100))
        defer {
            Task {
                await reader.stop(); await writer.stop()
            }
        }
        let key = try await writer.key([.ingest, .read])

        for index in 0..<15 {
            let written = try await Self.purchase(writer, user: "reader-\(index)", key: key)
            try #require(written.status == 200, "\(written.text)")
            let position = try #require(written.headers.first(name: "Ledger-Position"), "a write's answer names its position")
            let read = try await reader.send(
                "GET", "/v1/apps/\(Self.bundle)/users/reader-\(index)", key: key,
                headers: [("Ledger-Read-After", position)])
            #expect(read.status == 200 && Self.isPro(read), "read \(index) on the other server: \(read.text)")
        }
        #expect(reader.services.reads.sources.replica > 0, "the reads were served by the replica")

        // A replica that stops replaying is waited for, then the primary answers: never stale.
        let standbyAdmin = try Self.superuser(standby)
        try standbyAdmin.query("SELECT pg_wal_replay_pause()")
        for _ in 0..<500 where try standbyAdmin.query("SELECT pg_get_wal_replay_pause_state() AS s")[0]["s"].string() != "paused" {
            try await Task.sleep(for: .milliseconds(10))
        }
        let paused = try await Self.purchase(writer, user: "while-paused", key: key)
        let position = try #require(paused.headers.first(name: "Ledger-Position"))
        let fromPrimaryBefore = reader.services.reads.sources.primary
        let read = try await reader.send(
            "GET", "/v1/apps/\(Self.bundle)/users/while-paused", key: key, headers: [("Ledger-Read-After", position)])
        #expect(Self.isPro(read), "\(read.text)")
        #expect(reader.services.reads.sources.primary == fromPrimaryBefore + 1, "the primary answered what the paused replica lacked")
        try standbyAdmin.query("SELECT pg_wal_replay_resume()")

        let garbage = try await reader.send(
            "GET", "/v1/apps/\(Self.bundle)/users/x", key: key, headers: [("Ledger-Read-After", "yesterday")])
        #expect(garbage.status == 400 && garbage.errorCode == "invalid_position")
    }

    @Test func withThePrimaryDownReadsAnswerFromTheReplicaAndWritesAnswer503UntilItReturns() async throws {
        let (primary, standby) = try await TestCluster.primaryWithStandby()
        let writer = try await TestServer.start(cluster: primary, replicas: [standby])
        let reader = try await TestServer.start(configure: false, sharing: writer, replicas: [standby])
        defer {
            Task {
                await reader.stop(); await writer.stop()
            }
        }
        let key = try await writer.key([.ingest, .read])
        let written = try await Self.purchase(writer, user: "steady", key: key)
        let position = try #require(written.headers.first(name: "Ledger-Position"))
        // Replayed on the standby before the primary goes (asynchronous replication loses what it did not receive).
        let database = try #require(PostgresConfiguration.parse(writer.configuration.connectionString)["dbname"])
        let target = try #require(LogPosition(position))
        var replayed = LogPosition.start
        for _ in 0..<500 where replayed < target {
            // (Until the standby has replayed the database and its schema, there is nothing to read.)
            replayed =
                (try? ProjectionRunner.activeCheckpoint(on: PostgresConnection.connect(standby.configuration(database: database))))
                ?? .start
            try await Task.sleep(for: .milliseconds(20))
        }
        try #require(replayed >= target, "the standby replayed the write")

        try await primary.stop(mode: "immediate")
        let read = try await reader.send("GET", "/v1/apps/\(Self.bundle)/users/steady", key: key)
        #expect(read.status == 200 && Self.isPro(read), "reads go on from the replica: \(read.text) \(reader.services.reads.sources)")
        let trail = try await reader.send("GET", "/v1/apps/\(Self.bundle)/users/steady/events", key: key)
        #expect(trail.status == 200, "\(trail.text)")
        let write = try await Self.purchase(reader, user: "during-outage", key: key)
        #expect(write.status == 503 && write.headers.first(name: "Retry-After") != nil, "\(write.status) \(write.text)")
        let ready = try await reader.send("GET", "/readyz")
        #expect(ready.status == 200 && ready.json["status"] as? String == "read_only", "\(ready.text)")
        #expect(ready.text.contains(#""replica 1":"ok"#), "\(ready.text)")

        try await primary.start()
        var resumed: TestServer.Answer?
        for _ in 0..<100 {
            resumed = try await Self.purchase(reader, user: "after-outage", key: key)
            if resumed?.status == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(resumed?.status == 200 && resumed.map(Self.isPro) == true, "writes resume: \(resumed?.text ?? "")")
        let readyAgain = try await reader.send("GET", "/readyz")
        #expect(readyAgain.json["status"] as? String == "ready", "\(readyAgain.text)")
    }
}
