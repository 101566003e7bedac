import Foundation
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

/// The property the whole ledger rests on: a follower of the log sees every committed event exactly
/// once, in (tx_id, position) order, and never a rolled-back one — even when transactions commit
/// in another order than they took their positions.
@Suite struct OrderingTests {
    @Test func theSubscriberMissesNothingWhileANaiveReaderDoes() async throws {
        let configuration = try await TestCluster.database()
        let appRole = TestCluster.applicationRole(configuration)
        let writers = PostgresPool(configuration: appRole, size: 8, logger: TestCluster.quietLogger)
        let store = EventStore(
            pool: PostgresPool(configuration: appRole, size: 2, logger: TestCluster.quietLogger), logger: TestCluster.quietLogger)
        let notifications = Task { await store.runNotifications() }

        let committed = Locked<Set<UUID>>([])
        let rolledBack = Locked<Set<UUID>>([])

        // The subscriber under test.
        let seen = Locked<[RecordedEvent]>([])
        let follower = Task {
            for try await batch in store.subscribe(after: .start, batchSize: 100, pollInterval: .milliseconds(50)) {
                seen.withLock { $0.append(contentsOf: batch) }
            }
        }
        // The negative control: `position > checkpoint`, the design that loses events.
        let naiveSeen = Locked<Set<UUID>>([])
        let naive = Task {
            let connection = try PostgresConnection.connect(appRole)
            var checkpoint: Int64 = 0
            while !Task.isCancelled {
                let rows = try connection.query(
                    "SELECT position, event_id FROM ledger.events WHERE position > $1 ORDER BY position LIMIT 100", [checkpoint])
                for row in rows {
                    checkpoint = try row["position"].int64()
                    _ = naiveSeen.withLock { $0.insert(try! row["event_id"].uuid()) }
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }

        /// One transaction: append, maybe linger before committing, maybe roll back.
        @Sendable func write(stream: String, count: Int, linger: Double, rollback: Bool) async throws {
            let events = (0..<count).map { _ in testEvent() }
            let arguments = StreamAppend(stream: stream, events: events)
            let ids = Set(events.map(\.id))
            struct Abandon: Error {}
            do {
                try await writers.withConnection { connection in
                    try connection.transaction { connection in
                        try connection.query(
                            "SELECT * FROM ledger.append_events($1, NULL, $2::jsonb)",
                            [arguments.stream, TestEncoding.events(arguments.events)])
                        if linger > 0 { try connection.query("SELECT pg_sleep($1)", [linger]) }
                        if rollback { throw Abandon() }
                    }
                }
                committed.withLock { $0.formUnion(ids) }
            } catch is Abandon {
                rolledBack.withLock { $0.formUnion(ids) }
            }
        }

        // A forced out-of-order commit, so the negative control misses at least this one event:
        // A takes its position first and commits last, after B is already visible.
        let slow = Task { try await write(stream: uniqueStream("slow"), count: 1, linger: 1.0, rollback: false) }
        let fast = Task {
            try await Task.sleep(for: .milliseconds(200))
            try await write(stream: uniqueStream("fast"), count: 1, linger: 0, rollback: false)
        }

        // Six writers of 60 transactions each (a count, not a duration: a busy machine must not
        // shrink the test): 1 in 5 lingers before commit, 1 in 7 rolls back.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<6 {
                group.addTask {
                    for n in 1...60 {
                        let stream = "stream-\(writer)-\(n % 5)"
                        try await write(
                            stream: stream, count: 1 + n % 3, linger: n % 5 == 0 ? Double(n % 3 + 1) * 0.05 : 0,
                            rollback: n % 7 == 0)
                    }
                }
            }
            try await group.waitForAll()
        }
        try await slow.value
        try await fast.value

        let expected = committed.value
        try await waitUntil { seen.withLock { $0.count } >= expected.count }
        try await Task.sleep(for: .milliseconds(300)) // anything extra (a duplicate) would arrive now
        follower.cancel()
        naive.cancel()
        notifications.cancel()
        await notifications.value

        let events = seen.value
        let ids = events.map(\.id)
        #expect(expected.count > 200, "the test wrote a meaningful number of events (\(expected.count))")
        #expect(Set(ids) == expected, "every committed event arrived")
        #expect(ids.count == Set(ids).count, "no event arrived twice")
        #expect(rolledBack.value.isDisjoint(with: ids), "no rolled-back event arrived")
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.position < $1.position }, "arrival order is (tx_id, position) order")
        let naiveMissed = expected.subtracting(naiveSeen.value).count
        #expect(naiveMissed > 0, "the negative control must lose events, or this test proves nothing")
        print(
            "ordering: \(expected.count) committed, \(rolledBack.withLock { $0.count }) rolled back; subscriber got \(Set(ids).count), naive reader missed \(naiveMissed)"
        )
    }
}

/// The append function's argument, as the event store builds it (kept here for raw-SQL tests).
enum TestEncoding {
    static func events(_ events: [NewEvent]) -> String {
        let objects = events.map { event -> String in
            let data = String(data: try! JSONSerialization.data(withJSONObject: [event.data], options: []), encoding: .utf8)!.dropFirst()
                .dropLast()
            return #"{"id":"\#(event.id.uuidString.lowercased())","type":"\#(event.type)","data":\#(data)}"#
        }
        return "[" + objects.joined(separator: ",") + "]"
    }
}
