/// The instant by which the request being served must have its answer, carried like its trace:
/// a task-local the HTTP edge sets, which the database pool takes along to its threads, so that
/// every wait on the way — for a free connection, a connection being made, an answer, a retry, a
/// group commit — ends by the same instant instead of each spending a budget of its own. Past it
/// the request is answered 503 with `Retry-After`: a client that waits longer than the ledger
/// promised has already given up.
package enum RequestDeadline {
    @TaskLocal package static var current: ContinuousClock.Instant?

    /// The sooner of `instant` and the request's deadline (nil: neither sets one).
    package static func capping(_ instant: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        switch (instant, current) {
        case (let instant?, let deadline?): min(instant, deadline)
        case (let instant, nil): instant
        case (nil, let deadline): deadline
        }
    }

    /// Whether the request's deadline has passed (never, outside a request).
    package static var hasPassed: Bool { current.map { $0 <= .now } ?? false }

    /// Runs `body` with no request's deadline: for work a request starts but others share, such
    /// as the writer of a group commit, which must not stop when its first request gives up.
    package static func detached<T>(_ body: () async throws -> T) async rethrows -> T {
        try await $current.withValue(nil) { try await body() }
    }
}
