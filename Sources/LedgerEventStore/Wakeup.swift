/// A broadcast "something changed" signal with a generation counter, so a waiter that read
/// generation g returns at once if a signal came after it read — no wake-up is ever lost between
/// "found nothing" and "start waiting".
final class Wakeup: Sendable {
    private let generations = Watermark<UInt64>(0)

    var generation: UInt64 { generations.value }

    func signal() { generations.raise { $0 &+ 1 } }

    /// Returns after a signal newer than `generation`, after `timeout`, or on cancellation.
    func wait(after generation: UInt64, timeout: Duration) async {
        _ = await generations.wait(reaching: generation &+ 1, timeout: timeout)
    }
}
