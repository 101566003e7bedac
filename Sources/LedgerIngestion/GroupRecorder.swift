import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres
import Synchronization

/// Group commit for evidence a user presents: requests that arrive while a group is being
/// written wait and go together in the next one. A group is one transaction of two round trips
/// whatever its size — its evidence stored and its purchase streams read, then every stream
/// appended by one call and the commit — where one request alone took four round trips and two
/// commits: most of PostgreSQL's time per ingestion went to statements and commits, not rows.
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
        /// Record the work alone — after storing the evidence, unless the group stored it.
        case alone(evidenceStored: Bool)
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
        guard request.work.allSatisfy(\.isDecided) else { return try await recordAlone(request) }
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
        case .alone(let stored): return try await recordAlone(request, evidenceStored: stored)
        }
    }

    /// The one-by-one path: evidence stored, then each stream decided on what it holds.
    private func recordAlone(_ request: Request, evidenceStored: Bool = false) async throws -> FactRecorder.Outcome {
        if !evidenceStored {
            let evidence = EvidenceStore(pool: store.pool)
            for item in request.evidence { try await evidence.store(Data(item.body.utf8), kind: item.kind, bundleID: item.bundleID, answers: item.answers) }
        }
        return try await recorder.record(request.work, bundleID: request.bundleID)
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

    /// The group in one transaction and two round trips: its evidence inserted and its streams read;
    /// then, decided, its appends and the commit. A group whose append fails is rolled back whole,
    /// its evidence too, and its requests go alone.
    private func write(_ requests: [Request]) async throws -> [Result] {
        let streams = Array(Set(requests.flatMap { $0.work.map(\.stream) }))
        let opening = [
            PipelinedStatement("BEGIN"),
            // The streams' locks, as every writer that decides on a stream takes them: what the
            // group reads below cannot move before it appends.
            EventStore.streamLocksStatement(streams),
            EvidenceStore.insert(requests.flatMap(\.evidence)),
            PipelinedStatement(EventStore.selectEventsSQL + " WHERE e.stream = ANY($1::text[]) ORDER BY e.stream, e.version",
                               [PostgresTextArray(streams)]),
        ]
        let (results, appended) = try await store.pool.withConnection { connection -> ([Result], Bool) in
            let rows = try connection.pipeline(opening, transaction: false)[3]
            do {
                var existing: [String: [RecordedEvent]] = [:]
                for row in rows {
                    let event = try RecordedEvent(row: row)
                    existing[event.stream, default: []].append(event)
                }
                var (results, appends, appendedBy) = Self.decide(requests, existing: existing)
                guard !appends.isEmpty else {
                    // Only replays: the evidence alone need not wait for the disk (see EvidenceStore).
                    _ = try connection.pipeline([EvidenceStore.lazyCommit, PipelinedStatement("COMMIT")], transaction: false)
                    return (results, false)
                }
                do {
                    let rows = try connection.pipeline([EventStore.groupStatement(appends), PipelinedStatement("COMMIT")], transaction: false)[0]
                    for (result, index) in zip(try EventStore.groupResults(appends, rows: rows), appendedBy) {
                        guard case .recorded(var outcome) = results[index] else { continue }
                        outcome.wrote(result)
                        results[index] = .recorded(outcome)
                    }
                    return (results, true)
                } catch is PostgresError {
                    // Decided on streams that moved (or ids that exist), or the database failed:
                    // nothing of the group stands; every request decides again, alone.
                    connection.rollbackIfNeeded()
                    return (requests.map { _ in .alone(evidenceStored: false) }, false)
                }
            } catch {
                connection.rollbackIfNeeded()
                throw error
            }
        }
        if appended { store.announceAppends() }
        return results
    }

    /// Every request decided on the streams as read; a stream already taken by an earlier request
    /// of the group sends the later one to record alone (its evidence is stored with the group's).
    private static func decide(_ requests: [Request], existing: [String: [RecordedEvent]])
        -> (results: [Result], appends: [StreamAppend], appendedBy: [Int]) {
        var results = [Result](repeating: .alone(evidenceStored: true), count: requests.count)
        var appends: [StreamAppend] = []
        var appendedBy: [Int] = []   // request index of each append
        var taken: Set<String> = []
        let now = Date()   // decisions are stamped when made, on what was just read
        for (index, request) in requests.enumerated() {
            guard request.work.allSatisfy({ !taken.contains($0.stream) }) else { continue }
            taken.formUnion(request.work.map(\.stream))
            // A request that cannot be decided (a stored event it cannot read) fails alone, with
            // its own error, not the group.
            guard let (outcome, mine) = try? decide(request, existing: existing, now: now) else { continue }
            results[index] = .recorded(outcome)
            appends += mine
            appendedBy += Array(repeating: index, count: mine.count)
        }
        return (results, appends, appendedBy)
    }
}
