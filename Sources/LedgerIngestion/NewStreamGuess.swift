/// Whether the next ingestion group may take its purchase streams to be new, with no I/O.
///
/// A group that assumes so (`EventStore.withGroupAppend`'s `assumingNewStreams`) saves a round
/// trip — no read of its streams before deciding — and is refused whole when one of them exists
/// after all, to be written again the usual way: a round trip and a rolled-back transaction lost.
/// New purchases come in runs (a backfill, a launch, a sale) and so do re-presented ones (apps
/// restoring at launch, Apple retrying), so the guess follows the groups before: a refusal pauses
/// it for 4, then 8, … up to 256 groups while refusals go on; each group it wins halves the pause.
///
/// It also carries the `users` projection's version the last group wrote, which names the tables
/// an assuming group reads in the round trip that checks it (`InlineProjection.Version.assumed`).
struct NewStreamGuess {
    static let longestPause = 256

    /// The `users` version the last group wrote; nil until one has written.
    private(set) var version: Int?
    private var pause = 0
    private var skipping = 0

    /// The version to assume for the next group, or nil: read its streams first.
    mutating func next() -> Int? {
        guard skipping == 0 else {
            skipping -= 1
            return nil
        }
        return version
    }

    /// A group was written; `assumed`: without reading its streams.
    mutating func written(version: Int, assumed: Bool) {
        self.version = version
        if assumed { pause /= 2 }
    }

    /// A group that assumed its streams new was refused (one existed, or anything else failed).
    mutating func refused() {
        pause = min(max(pause * 2, 4), Self.longestPause)
        skipping = pause
    }
}
