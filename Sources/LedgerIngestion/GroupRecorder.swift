import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres
import LedgerTracing
import Synchronization
import Tracing

/// Group commit for evidence a user presents: requests that arrive while a group is being
/// written wait and go together in the next one. A group is one transaction of three round trips
/// whatever its size — its evidence stored and its purchase streams read; every stream appended by
/// one call, with the reads of its users' facts behind it; their projection written and the
/// commit — where one request alone took four round trips and two commits: most of PostgreSQL's
/// time per ingestion went to statements and commits, not rows. Two round trips when the group
/// takes its purchase streams to be new (`NewStreamGuess`): no read of them before deciding.
///
/// The group's transaction applies its own appends to the `users` projection (a `GroupProjection`),
/// so each request is answered at commit with its user's new timeline, not after the worker's
/// next batch.
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
        /// The user whose state answers the request, if any.
        var presenter: String?
        /// The sampled trace the request is part of: its events are recorded with it.
        var traceparent: String? = Spans.traceparent()
    }

    enum Result: Sendable {
        case recorded(FactRecorder.Outcome)
        /// Record the work alone — after storing the evidence, unless the group stored it.
        case alone(evidenceStored: Bool)
    }

    private struct Waiting {
        var request: Request
        var waiter: GroupWaiter<(Result, Int)>
        /// The request's trace: a group's writes are traced as the work of its first request.
        var context = ServiceContext.current
    }

    let store: EventStore
    let evidence: EvidenceStore
    let recorder: FactRecorder
    /// Applies each group's appends in its transaction, so its requests are answered at commit.
    let projection: any GroupProjection
    private let queue: Mutex<GroupQueue<Waiting>>
    private let deadlines = DeadlineWatch<(Result, Int)>()
    private let guess = Mutex(NewStreamGuess())
    /// Told each group's size and how long its transaction took (for the metrics).
    private let written: @Sendable (_ size: Int, _ took: Duration) -> Void

    init(
        store: EventStore, evidence: EvidenceStore, recorder: FactRecorder, projection: any GroupProjection, maximumGroup: Int = 64,
        written: @escaping @Sendable (_ size: Int, _ took: Duration) -> Void = { _, _ in }
    ) {
        self.written = written
        self.store = store
        self.projection = projection
        self.evidence = evidence
        self.recorder = recorder
        self.queue = Mutex(GroupQueue(maximumGroup: maximumGroup))
    }

    /// Stores the request's evidence and records its work, with whatever requests are waiting.
    func record(_ request: Request) async throws -> FactRecorder.Outcome {
        guard request.work.allSatisfy(\.isDecided) else { return try await recordAlone(request) }
        let result = try await Spans.child("group commit") { span in
            let (result, size) = try await GroupWaiter<(Result, Int)>.wait(by: RequestDeadline.current, watch: deadlines) { waiter in
                let arrival = queue.withLock { $0.arrive(Waiting(request: request, waiter: waiter)) }
                // The writer serves every request that joins, not the first one's deadline.
                if arrival == .write { Task { await RequestDeadline.detached { await self.writeWhileWaiting() } } }
            }
            span?.attributes["ledger.group.size"] = size
            return result
        }
        switch result {
        case .recorded(let outcome): return outcome
        case .alone(let stored): return try await recordAlone(request, evidenceStored: stored)
        }
    }

    /// The one-by-one path: evidence stored, then each stream decided on what it holds.
    private func recordAlone(_ request: Request, evidenceStored: Bool = false) async throws -> FactRecorder.Outcome {
        if !evidenceStored {
            for item in request.evidence {
                try await evidence.store(Data(item.body.utf8), kind: item.kind, bundleID: item.bundleID, answers: item.answers)
            }
        }
        return try await recorder.record(request.work, bundleID: request.bundleID)
    }

    /// One group at a time, for as long as requests keep arriving.
    private func writeWhileWaiting() async {
        while case .write(let group) = queue.withLock({ $0.nextGroup() }) {
            let started = ContinuousClock.now
            do {
                let results = try await ServiceContext.withValue(group.first?.context) {
                    try await Spans.child("write group") { span in
                        span?.attributes["ledger.group.size"] = group.count
                        return try await write(group.map(\.request))
                    }
                }
                for (waiting, result) in zip(group, results) { waiting.waiter.answer(.success((result, group.count))) }
            } catch {
                for waiting in group { waiting.waiter.answer(.failure(error)) }
            }
            written(group.count, ContinuousClock.now - started)
        }
    }

    /// One request's outcome so far and its appends, decided on the streams as read.
    private static func decide(
        _ request: Request, existing: [String: [RecordedEvent]], now: Date
    ) throws -> (FactRecorder.Outcome, [StreamAppend]) {
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

    /// The group in one transaction (`EventStore.withGroupAppend`): its evidence stored alongside
    /// the reads of its streams, then its appends. A group whose append is refused is rolled back
    /// whole, its evidence too, and its requests go alone. When the groups before suggest it
    /// (`NewStreamGuess`), the group first takes its streams to be new, reading nothing before
    /// it appends; refused, it is written again the usual way.
    private func write(_ requests: [Request]) async throws -> [Result] {
        if let version = guess.withLock({ $0.next() }) {
            let outcome = try await append(requests, assumingVersion: version)
            if case .refused = outcome { guess.withLock { $0.refused() } } else { return results(of: outcome, for: requests) }
        }
        return results(of: try await append(requests, assumingVersion: nil), for: requests)
    }

    /// The group's transaction; with `assumingVersion`, on streams taken to be new and the `users`
    /// version the group before wrote (both checked before anything is committed).
    private func append(_ requests: [Request], assumingVersion: Int?) async throws -> GroupAppendOutcome<Decided> {
        let streams = Array(Set(requests.flatMap { $0.work.map(\.stream) }))
        let presenters = Set(requests.compactMap { request in request.presenter.map { UserKey(bundleID: request.bundleID, userID: $0) } })
        let projection = self.projection
        var alongside = RoundTrip()
        let version = projection.open(&alongside)
        alongside.add([PipelinedStatement.genericPlans, EvidenceStore.insert(requests.flatMap(\.evidence))])
        let outcome = try await store.withGroupAppend(
            streams: streams, alongside: alongside, assumingNewStreams: assumingVersion != nil,
            // Only replays: the evidence alone need not wait for the disk (see EvidenceStore).
            lazyWithoutAppends: true,
            decide: { existing in
                let decided = Self.decide(requests, existing: existing)
                return (Decided(results: decided.results, appendedBy: decided.appendedBy), decided.appends)
            },
            finish: { commit in
                let commit = commit.sending(first: Self.traces(of: requests, appends: commit.appends, by: commit.decision.appendedBy))
                var decided = commit.decision
                let projecting = try projection.appendAndProject(
                    commit, opened: version, assumingVersion: assumingVersion, presenters: presenters)
                decided.projected = projecting.decision
                return GroupFinish(
                    closing: projecting.closing, appended: projecting.appended, decision: decided, committed: projecting.committed)
            })
        if case .appended(let decided, _) = outcome, let version = decided.projected?.version {
            guess.withLock { $0.written(version: version, assumed: assumingVersion != nil) }
        }
        return outcome
    }

    /// Each appended event with the trace of the request that decided it, if that one is traced.
    private static func traces(of requests: [Request], appends: [StreamAppend], by requestIndex: [Int]) -> [PipelinedStatement] {
        var pairs: [(event: UUID, traceparent: String)] = []
        for (append, index) in zip(appends, requestIndex) {
            guard let traceparent = requests[index].traceparent else { continue }
            pairs += append.events.map { ($0.id, traceparent) }
        }
        return EventTraces.statement(pairs: pairs).map { [$0] } ?? []
    }

    /// Each request's result from its group's transaction.
    private func results(of outcome: GroupAppendOutcome<Decided>, for requests: [Request]) -> [Result] {
        switch outcome {
        case .nothingToAppend(let decided):
            return decided.results
        case .appended(var decided, let appended):
            for (result, index) in zip(appended, decided.appendedBy) {
                guard case .recorded(var outcome) = decided.results[index] else { continue }
                outcome.wrote(result)
                decided.results[index] = .recorded(outcome)
            }
            guard let projected = decided.projected else { return decided.results }
            // Every request the group recorded is answered from the timelines its transaction wrote.
            return zip(requests, decided.results).map { request, result in
                guard case .recorded(var outcome) = result, let user = request.presenter,
                    let timeline = projected.timelines[UserKey(bundleID: request.bundleID, userID: user)]
                else { return result }
                outcome.projected = (timeline, projected.position)
                return .recorded(outcome)
            }
        case .refused:
            // Decided on streams that moved (or ids that exist), or the database failed while
            // appending or projecting: every request decides again, alone.
            return requests.map { _ in .alone(evidenceStored: false) }
        }
    }

    /// What the group's transaction decided, and what it projected once appended.
    private struct Decided: Sendable {
        var results: [Result]
        var appendedBy: [Int]
        var projected: GroupProjected?
    }

    /// Every request decided on the streams as read; a stream already taken by an earlier request
    /// of the group sends the later one to record alone (its evidence is stored with the group's).
    static func decide(
        _ requests: [Request], existing: [String: [RecordedEvent]]
    )
        -> (results: [Result], appends: [StreamAppend], appendedBy: [Int])
    {
        var results = [Result](repeating: .alone(evidenceStored: true), count: requests.count)
        var appends: [StreamAppend] = []
        var appendedBy: [Int] = [] // request index of each append
        var taken: Set<String> = []
        let now = Date() // decisions are stamped when made, on what was just read
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
