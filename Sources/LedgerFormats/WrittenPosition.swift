import Synchronization

/// The furthest log position a request's writes reached once they were projected: what its
/// answer reflects, and what a later read anywhere must reflect to show them.
///
/// Collected where every write waits for its projection (so no return type has to carry it)
/// into the box the HTTP edge binds for the request, which sends it back as `Ledger-Position`;
/// a client that reads through another server or replica sends it as `Ledger-Read-After`.
package final class WrittenPosition: Sendable {
    @TaskLocal package static var current: WrittenPosition?

    private let furthest = Mutex<LogPosition?>(nil)

    package init() {}

    package var position: LogPosition? { furthest.withLock { $0 } }

    package func record(_ position: LogPosition) {
        furthest.withLock { $0 = max($0 ?? position, position) }
    }
}
