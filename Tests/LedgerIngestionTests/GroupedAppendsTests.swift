import Foundation
import LedgerEventStore
import LedgerIngestion
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Appends at any version committed in groups: every append lands once with its own answer, and
/// one refused append (an id used before with other content) costs no other its write.
@Suite struct GroupedAppendsTests {
    @Test func concurrentAppendsLandOnceEachAndARefusedOneFailsAlone() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(
            configuration: TestCluster.applicationRole(configuration), size: 4, waitLimit: .seconds(60), logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let appends = GroupedAppends(store: store, maximumGroup: 8)
        let streams = (0..<5).map { _ in uniqueStream("grouped") }
        let used = UUID()
        try await store.append([testEvent(id: used)], to: streams[0])

        // 60 appends of one or two events to five streams at once; one reuses the id above with
        // other content, another is the event above again (a replay, answered as first written).
        let all = await withTaskGroup(of: (Int, Result<AppendResult, any Error>).self) { group in
            for index in 0..<60 {
                group.addTask {
                    let events: [NewEvent] =
                        switch index {
                        case 17: [testEvent(data: #"{"n": 2}"#, id: used)]
                        case 31: [testEvent(id: used)]
                        default: (0...(index % 2)).map { _ in testEvent() }
                        }
                    do {
                        return (index, .success(try await appends.append(events, to: streams[index == 31 ? 0 : index % 5])))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var outcomes: [Int: Result<AppendResult, any Error>] = [:]
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes
        }

        #expect(all.count == 60)
        for (index, outcome) in all.sorted(by: { $0.key < $1.key }) {
            switch (index, outcome) {
            case (17, .failure(let error)):
                guard case EventStoreError.idempotencyConflict = error else {
                    Issue.record("the reused id was refused for another reason: \(error)")
                    continue
                }
            case (17, .success):
                Issue.record("an id used before with other content was appended")
            case (31, .success(let result)):
                #expect(result.events.map(\.id) == [used], "a replay answers with the event first written")
            case (_, .failure(let error)):
                Issue.record("append \(index) failed: \(error)")
            case (_, .success(let result)):
                #expect(result.events.count == index % 2 + 1)
            }
        }
        // Each stream holds exactly what was appended to it, at versions without gaps.
        var total = 0
        for (number, stream) in streams.enumerated() {
            let expected = (0..<60).filter { $0 % 5 == number && $0 != 17 && $0 != 31 }.map { $0 % 2 + 1 }.reduce(0, +)
            let versions = try await store.read(stream: stream).map(\.version)
            let count = expected + (number == 0 ? 1 : 0)
            #expect(versions == Array(1...Int64(count)), "\(stream)")
            total += count
        }
        let stored = try await pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
        #expect(stored == total)
        await pool.close()
    }
}
