import LedgerBackground
import LedgerChanges
import LedgerEventStore
import Synchronization

extension WebhookDispatcher {
    /// What one round of the loop leaves the next: the deliveries under way, the attempts that
    /// finished since, and those a failed round could not record (their leases stay this server's
    /// until recorded, or until they run out).
    struct Rounds: Sendable {
        var inFlight = 0
        var finished: [Attempt] = []
        var unrecorded: [Attempt] = []
    }

    /// After a failed round: soon (the database blinked), then ever less often up to the loop's
    /// limit. Its first pause is the half second the dispatcher always waited.
    static let backoff = Backoff(first: .milliseconds(500))

    /// Runs until cancelled. The loop's steps record and lease; the deliveries they start run
    /// beside it, in this task's group, and are abandoned when it stops (their leases run out and
    /// they go again).
    package func run() async {
        let http = PinnedClients(concurrency: policy.concurrency, grace: policy.attemptTimeout + .seconds(1))
        let (leases, starting) = AsyncStream.makeStream(of: Lease.self)
        let loop = BackgroundLoop(reportingTo: heartbeat, backoff: Self.backoff, logger: logger) { try await self.step(starting: starting) }
        await withDiscardingTaskGroup { group in
            group.addTask {
                await loop.runUntilCancelled()
                starting.finish()
            }
            for await lease in leases {
                group.addTask { [self] in
                    let attempt = await deliver(lease, with: http)
                    rounds.withLock { $0.finished.append(attempt) }
                    wake.raise { $0 &+ 1 }
                }
            }
            group.cancelAll()
        }
        await http.shutdown()
    }

    /// One round: what finished recorded and more leased in one round trip, those deliveries
    /// started; then a wait for a delivery to finish, a change to be announced, or the poll
    /// interval (a retry may have come due).
    func step(starting: AsyncStream<Lease>.Continuation) async throws -> BackgroundLoop.Next {
        let (generation, announced) = (wake.value, notifications.position)
        let (attempts, inFlight) = rounds.withLock { rounds in
            rounds.inFlight -= rounds.finished.count
            rounds.unrecorded += rounds.finished
            rounds.finished = []
            return (rounds.unrecorded, rounds.inFlight)
        }
        let leases = try await recordAndLease(attempts, capacity: policy.concurrency - inFlight)
        rounds.withLock { rounds in
            rounds.unrecorded = []
            rounds.inFlight += leases.count
        }
        for lease in leases { starting.yield(lease) }
        return .whenWoken { await self.waitForWork(after: generation, announced: announced) }
    }

    /// Returns when a delivery finished after `generation`, a change was announced after
    /// `announced` (here or by another server), or the poll interval passed — at once if either
    /// came during the round.
    private func waitForWork(after generation: UInt64, announced: Int64) async {
        let (wake, notifications, poll) = (self.wake, self.notifications, policy.pollInterval)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await wake.wait(reaching: generation &+ 1, timeout: poll) }
            group.addTask { _ = await notifications.wait(after: announced, timeout: poll) }
            await group.next()
            group.cancelAll()
        }
    }
}
