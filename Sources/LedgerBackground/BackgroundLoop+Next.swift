extension BackgroundLoop {
    /// What a step that worked asks of its loop: when the next step starts.
    package enum Next: Sendable {
        /// At once: more work is waiting (a full batch may have left some behind).
        case again
        /// After `Duration`, on purpose: a reconciler's interval, a short pause for a transaction
        /// still open. The heartbeat counts the rest as a round's, not as silence.
        case after(Duration)
        /// When the closure returns: it waits for the part's own wake-up (the next append, a
        /// projection batch, an announced change), bounded by the part's own poll interval. The
        /// step builds it from what it read before its round — a generation, a position — so a
        /// wake-up that came during the round returns it at once and none is lost.
        case whenWoken(@Sendable () async -> Void)

        /// How long the part rests on purpose before its next round.
        var rest: Duration {
            guard case .after(let duration) = self else { return .zero }
            return duration
        }
    }
}
