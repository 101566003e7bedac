import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres
import Synchronization

/// Group commit for evidence a user presents: requests that arrive while a group is being
/// written wait and go together in the next one. A group costs two round trips whatever its
/// size — its evidence stored and its purchase streams read in one pipeline, every stream
/// appended in one call and one commit — where one request alone took four, most of
/// PostgreSQL's time per ingestion going to statements and commits rather than rows.
///
/// Each request is decided exactly as on its own (`FactRecorder.plan` on the stream as read).
/// When the group cannot be appended as decided — a stream moved meanwhile, two requests of the
/// group touch one stream, an event id exists — its requests are recorded one by one instead,
/// each deciding again on what it reads: the group is an optimisation, never a second rule.
final class GroupRecorder: Sendable {
    /// What one request asks to record: its raw evidence (stored first) and its streams' work.
    struct Request: Sendable {
        var evidence: [EvidenceStore.Item]
        var work: [FactRecorder.StreamWork]
        var bundleID: String
    }

    private enum Result: Sendable {
        case recorded(FactRecorder.Outcome)
        /// Evidence stored; record the work alone.
        case alone
    }

    private struct Waiting {
        var request: Request
        var continuation: CheckedContinuation<Result, any Error>
    }

    private struct Queue {
        var waiting: [Waiting] = []
        var writing = false
    }

    let store: EventStore
    let recorder: FactRecorder
    let maximumGroup: Int
    private let queue = Mutex(Queue())

    init(store: EventStore, recorder: FactRecorder, maximumGroup: Int = 64) {
        self.store = store
        self.recorder = recorder
        self.maximumGroup = maximumGroup
    }

    /// Stores the request's evidence and records its work, with whatever requests are waiting.
    func record(_ request: Request) async throws -> FactRecorder.Outcome {
        guard request.work.allSatisfy(\.isDecided) else {
            for item in request.evidence { try await EvidenceStore(pool: store.pool).store(Data(item.body.utf8), kind: item.kind, bundleID: item.bundleID, answers: item.answers) }
            return try await recorder.record(request.work, bundleID: request.bundleID)
        }
        let result = try await withCheckedThrowingContinuation { continuation in
            let lead = queue.withLock { queue in
                queue.waiting.append(Waiting(request: request, continuation: continuation))
                defer { queue.writing = true }
                return !queue.writing
            }
            if lead { Task { await self.writeWhileWaiting() } }
        }
        switch result {
        case .recorded(let outcome): return outcome
        case .alone: return try await recorder.record(request.work, bundleID: request.bundleID)
        }
    }

    /// One group at a time, for as long as requests keep arriving.
    private func writeWhileWaiting() async {
        while true {
            let group = queue.withLock { queue in
                let group = Array(queue.waiting.prefix(maximumGroup))
                queue.waiting.removeFirst(group.count)
                if group.isEmpty { queue.writing = false }
                return group
            }
            guard !group.isEmpty else { return }
            do {
                let results = try await write(group.map(\.request))
                for (waiting, result) in zip(group, results) { waiting.continuation.resume(returning: result) }
            } catch {
                for waiting in group { waiting.continuation.resume(throwing: error) }
            }
        }
    }

    /// One request's outcome so far and its appends, decided on the streams as read.
    private static func decide(_ request: Request, existing: [String: [RecordedEvent]], now: Date) throws -> (FactRecorder.Outcome, [StreamAppend]) {
        var outcome = FactRecorder.Outcome()
        var appends: [StreamAppend] = []
        for work in request.work {
            let plan = try FactRecorder.plan(work, existing: existing[work.stream] ?? [], bundleID: request.bundleID, now: now)
            if let kept = plan.kept { outcome.keptByAnother.insert(kept) }
            outcome.waitFor(plan.seen)
            if !plan.fresh.isEmpty { appends.append(StreamAppend(stream: work.stream, events: plan.fresh, expectedVersion: plan.expected)) }
        }
        return (outcome, appends)
    }

    /// The group's evidence and stream reads in one pipelined transaction (committed without
    /// waiting for the disk, like all evidence: the appends' commit flushes it), then its appends.
    private func write(_ requests: [Request]) async throws -> [Result] {
        let streams = Array(Set(requests.flatMap { $0.work.map(\.stream) }))
        let statements = [
            EvidenceStore.lazyCommit,
            EvidenceStore.insert(requests.flatMap(\.evidence)),
            PipelinedStatement(EventStore.selectEventsSQL + " WHERE e.stream = ANY($1::text[]) ORDER BY e.stream, e.version",
                               [PostgresTextArray(streams)]),
        ]
        let rows = try await store.pool.withConnection { try $0.pipeline(statements, transaction: true) }[2]
        var existing: [String: [RecordedEvent]] = [:]
        for row in rows {
            let event = try RecordedEvent(row: row)
            existing[event.stream, default: []].append(event)
        }

        // Decide every request; a stream already taken by an earlier request of the group sends
        // the later one to record alone.
        var results = [Result](repeating: .alone, count: requests.count)
        var appends: [StreamAppend] = []
        var appendedBy: [Int] = []   // request index of each append
        var taken: Set<String> = []
        let now = Date()   // decisions are stamped when made, on what was just read
        for (index, request) in requests.enumerated() {
            guard request.work.allSatisfy({ !taken.contains($0.stream) }) else { continue }
            taken.formUnion(request.work.map(\.stream))
            // A request that cannot be decided (a stored event it cannot read) fails alone, with
            // its own error, not the group.
            guard let (outcome, mine) = try? Self.decide(request, existing: existing, now: now) else { continue }
            results[index] = .recorded(outcome)
            appends += mine
            appendedBy += Array(repeating: index, count: mine.count)
        }
        guard !appends.isEmpty else { return results }
        do {
            for (result, index) in zip(try await store.append(group: appends), appendedBy) {
                guard case .recorded(var outcome) = results[index] else { continue }
                outcome.wrote(result)
                results[index] = .recorded(outcome)
            }
        } catch is EventStoreError {
            // Decided on streams that moved (or ids that exist): every request that was to
            // append decides again, alone. Those that had nothing to append stand.
            for index in Set(appendedBy) { results[index] = .alone }
        }
        return results
    }
}
