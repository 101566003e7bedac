import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite struct ConcurrencyTests {
    @Test(arguments: [2, 8, 16])
    func exactlyOneOfNRacingAppendsWins(writers: Int) async throws {
        let (store, _) = try await makeStore(size: 8)
        let stream = uniqueStream()
        try await store.append([testEvent()], to: stream)
        let outcomes = await withTaskGroup(of: Result<AppendResult, any Error>.self) { group in
            for _ in 0..<writers {
                group.addTask { await Result { try await store.append([testEvent()], to: stream, expectedVersion: .exact(1)) } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let successes = outcomes.compactMap { try? $0.get() }
        #expect(successes.count == 1)
        for case .failure(let error) in outcomes {
            guard case EventStoreError.wrongExpectedVersion(_, .exact(1), 2) = error else {
                Issue.record("losers get wrongExpectedVersion carrying version 2, got \(error)")
                continue
            }
        }
        let read = try await store.read(stream: stream)
        #expect(read.map(\.version) == [1, 2])
        #expect(read.last?.id == successes.first?.events.first?.id, "the reported success is the one stored")
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
