import Logging

extension BackgroundLoop {
    /// A part that does one whole round every `interval` (a reconciler, a poll, a publisher): the
    /// round's own count of what it did is the part's business, the loop needs only to know it ended.
    package static func periodic(
        every interval: Duration, reportingTo heartbeat: Heartbeat, backoff: Backoff = Backoff(), logger: Logger,
        round: @escaping @Sendable () async throws -> Void
    ) -> BackgroundLoop {
        BackgroundLoop(reportingTo: heartbeat, backoff: backoff, logger: logger) {
            try await round()
            return .after(interval)
        }
    }

    /// A part that works through a queue a batch at a time (an outbox, the proof tree's leaves):
    /// a round that filled its batch may have left work behind, so the next starts at once; a
    /// shorter one emptied the queue, and the next looks again after `interval`. `round` takes
    /// the batch's size and answers how many it handled.
    package static func draining(
        batch: Int, every interval: Duration, reportingTo heartbeat: Heartbeat, backoff: Backoff = Backoff(), logger: Logger,
        round: @escaping @Sendable (_ limit: Int) async throws -> Int
    ) -> BackgroundLoop {
        BackgroundLoop(reportingTo: heartbeat, backoff: backoff, logger: logger) {
            try await round(batch) >= batch ? .again : .after(interval)
        }
    }
}
