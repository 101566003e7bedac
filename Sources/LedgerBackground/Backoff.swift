/// How long a background part waits before it tries again after failing rounds in a row: twice as
/// long after each, from `first` up to `limit`, less a random part of the second half.
///
/// A failure is most often the database away or changing primary: the first retry comes soon (a
/// blip is over by then), later ones ever less often, never further apart than `limit` so a part
/// finds its database back soon after it returns. The random part spreads the parts — and the
/// servers — that failed together, so they do not all knock at the same instant.
package struct Backoff: Sendable, Equatable {
    package var first: Duration
    package var limit: Duration

    /// How long an outbox row (an acknowledgement owed to Google, a transaction to finish at
    /// Apple) waits after its failed tries: 5 s, 10 s, 20 s … an hour at most — well inside
    /// the stores' deadlines however long they are away.
    package static let outboxRetry = Backoff(first: .seconds(5), limit: .seconds(3600))

    /// How long a round that asks a store (Apple, Google) waits after failing as a whole — its
    /// database away, the apps unreadable: 5 s, 10 s … a minute at most. The store's own refusals
    /// are each row's business and never fail the round.
    package static let storeRound = Backoff(first: .seconds(5), limit: .seconds(60))

    package init(first: Duration = .milliseconds(100), limit: Duration = .seconds(5)) {
        self.first = first
        self.limit = max(first, limit)
    }

    /// The wait after `failures` failed rounds in a row (1: the first failure). `jitter` in 0..<1
    /// takes that share of the second half off: the wait is in (ceiling / 2, ceiling], so each is
    /// longer than the one before until the limit.
    package func delay(afterFailures failures: Int, jitter: Double) -> Duration {
        let ceiling = self.ceiling(afterFailures: failures)
        return ceiling - ceiling * (min(max(jitter, 0), 0.999_999) / 2)
    }

    /// The wait before any jitter: `first` doubled for each failure after the first, at most `limit`.
    package func ceiling(afterFailures failures: Int) -> Duration {
        var ceiling = first
        for _ in 1..<max(failures, 1) {
            ceiling *= 2
            if ceiling >= limit { return limit }
        }
        return min(ceiling, limit)
    }
}
