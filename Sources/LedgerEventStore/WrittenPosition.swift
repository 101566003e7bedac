import Synchronization

/// The furthest log position a request's writes reached once they were projected: what its
/// answer reflects, and what a later read anywhere must reflect to show them.
///
/// Collected where every write waits for its projection (so no return type has to carry it)
/// into the box the HTTP edge binds for the request, which sends it back as `Ledger-Position`;
/// a client that reads through another server or replica sends it as `Ledger-Read-After`.
public final class WrittenPosition: Sendable {
    @TaskLocal public static var current: WrittenPosition?

    private let furthest = Mutex<LogPosition?>(nil)

    public init() {}

    public var position: LogPosition? { furthest.withLock { $0 } }

    public func record(_ position: LogPosition) {
        furthest.withLock { $0 = max($0 ?? position, position) }
    }
}
