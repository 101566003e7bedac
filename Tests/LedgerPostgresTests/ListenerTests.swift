import Foundation
import LedgerBackground
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

@Suite struct ListenerTests {
    @Test func notificationsArriveOnTheListenerThread() async throws {
        let configuration = try await TestCluster.database()
        let received = Mutex<[PostgresNotification]>([])
        let listener = PostgresListener(configuration: configuration, channels: ["ledger_test"], logger: TestCluster.quietLogger) { note in
            received.withLock { $0.append(note) }
        }
        listener.start()
        defer { Task { await listener.stop() } }
        try await waitUntil { received.withLock { $0.contains(.connected) } }
        let sender = try PostgresConnection.connect(configuration)
        try sender.query("SELECT pg_notify('ledger_test', $1)", ["hello"])
        try await waitUntil { received.withLock { $0.contains(.notify(channel: "ledger_test", payload: "hello")) } }
    }

    @Test func theListenerReconnectsAfterItsConnectionIsKilled() async throws {
        var configuration = try await TestCluster.database()
        configuration.applicationName = "killed-\(UUID().uuidString.prefix(8))"
        let connects = Atomic<Int>(0)
        let listener = PostgresListener(configuration: configuration, channels: ["ledger_test"], logger: TestCluster.quietLogger) { note in
            if note == .connected { connects.add(1, ordering: .relaxed) }
        }
        listener.start()
        try await waitUntil { connects.load(ordering: .relaxed) == 1 }
        var adminConfiguration = configuration
        adminConfiguration.applicationName = "ledger-test-admin"
        let admin = try PostgresConnection.connect(adminConfiguration)
        try admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [configuration.applicationName])
        try await waitUntil { connects.load(ordering: .relaxed) == 2 }
        await listener.stop()
    }

    /// A server that stops answering without closing the socket (a machine gone, a partition):
    /// the idle ping finds out within its deadline and the listener connects again.
    /// On a cluster of its own: a stopped backend holds up whatever in its cluster waits for every
    /// backend (a database dropped or created elsewhere), which other tests must not feel.
    @Test func aListenerWhoseServerStopsAnsweringReconnects() async throws {
        var configuration = try await TestCluster.database(on: try await TestCluster.privateCluster())
        configuration.deadline = .seconds(1)
        configuration.applicationName = "frozen-\(UUID().uuidString.prefix(8))"

        let connects = Atomic<Int>(0)
        let heartbeat = Heartbeat("listener")
        let listener = PostgresListener(
            configuration: configuration, channels: ["ledger_frozen"], heartbeat: heartbeat, logger: TestCluster.quietLogger
        ) {
            note in
            if note == .connected { connects.add(1, ordering: .relaxed) }
        }
        listener.start()
        defer { Task { await listener.stop() } }
        try await waitUntil { connects.load(ordering: .relaxed) == 1 }
        let admin = try PostgresConnection.connect(TestCluster.superuser(configuration))
        let found = try admin.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [configuration.applicationName])
        let backend = try #require(found.first, "the listener's backend")["pid"].int()
        kill(pid_t(backend), SIGSTOP)
        defer {
            kill(pid_t(backend), SIGCONT)
            _ = try? admin.query("SELECT pg_terminate_backend($1)", [backend])
        }
        try await waitUntil(seconds: 15) { connects.load(ordering: .relaxed) == 2 }
        #expect(heartbeat.status(silentAfter: .seconds(30)) == .ok)
    }
}
