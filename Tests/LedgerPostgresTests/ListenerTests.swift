import Foundation
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

@Suite struct ListenerTests {
    @Test func notificationsArriveOnTheListenerThread() async throws {
        let configuration = try TestCluster.database()
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
        let configuration = try TestCluster.database()
        let connects = Atomic<Int>(0)
        let listener = PostgresListener(configuration: configuration, channels: ["ledger_test"], logger: TestCluster.quietLogger) { note in
            if note == .connected { connects.add(1, ordering: .relaxed) }
        }
        listener.start()
        try await waitUntil { connects.load(ordering: .relaxed) == 1 }
        let admin = try PostgresConnection.connect(configuration)
        try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()")
        try await waitUntil { connects.load(ordering: .relaxed) == 2 }
        await listener.stop()
    }
}
