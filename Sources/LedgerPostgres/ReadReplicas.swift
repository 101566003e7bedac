import Foundation
import LedgerFormats
import LedgerTracing
import Logging
import Synchronization
import Tracing

/// Reads served by PostgreSQL streaming replicas (`LEDGER_READ_DATABASE_URL`), each only once it
/// has replayed what the read must see (`ReadFence`), so read-your-writes holds across nodes.
///
/// A replica is checked by reading its own checkpoint of the projection reads are served from
/// (`checkpoint`, given by that projection: this type knows nodes, not tables) — the same number
/// the fence is made of — and is remembered as having reached it, so a read whose fence it already passed
/// costs no check. One that is behind is polled every millisecond up to `maximumWait`, then the
/// primary answers. With the primary away (it cannot be asked, nor can anything newer be written
/// meanwhile) a replica answers with what it has. With no replica configured every read goes to
/// the primary unchanged.
package final class ReadReplicas: Sendable {
    package let primary: PostgresPool
    package let replicas: [PostgresPool]
    package let fence: ReadFence
    let maximumWait: Duration
    let checkpoint: @Sendable (PostgresConnection) throws -> LogPosition
    let logger: Logger
    /// Each replica's checkpoint as last read: replay never goes backwards.
    private let reached: Mutex<[LogPosition]>
    /// Replicas that failed, left alone until then: a replica that is away costs a read nothing.
    private let resting: Mutex<[ContinuousClock.Instant?]>
    private let turn = Atomic<Int>(0)
    private let served = Mutex(Sources())

    /// How many reads each kind of node answered, for `/metrics` and tests.
    package struct Sources: Sendable, Equatable {
        package var replica = 0
        /// The replicas were behind the fence for longer than `maximumWait`.
        package var primary = 0
        /// The primary was away and a replica answered with what it had.
        package var replicaBehindFence = 0
        /// Reads that found every replica behind and waited for one to replay (or gave up).
        package var waited = 0
        /// The time those reads waited, in all.
        package var waitedFor = Duration.zero
    }

    package var sources: Sources { served.withLock { $0 } }

    package init(
        primary: PostgresPool, replicas: [PostgresPool], fence: ReadFence = ReadFence(), maximumWait: Duration = .milliseconds(250),
        checkpoint: @escaping @Sendable (PostgresConnection) throws -> LogPosition, logger: Logger
    ) {
        self.primary = primary
        self.checkpoint = checkpoint
        self.replicas = replicas
        self.fence = fence
        self.maximumWait = maximumWait
        self.logger = logger
        self.reached = Mutex(Array(repeating: .start, count: replicas.count))
        self.resting = Mutex(Array(repeating: nil, count: replicas.count))
    }

    /// The primary alone: what a server without replicas reads from.
    package static func primaryOnly(_ pool: PostgresPool, fence: ReadFence = ReadFence(), logger: Logger) -> ReadReplicas {
        // With no replica nothing is ever checked against a checkpoint.
        ReadReplicas(primary: pool, replicas: [], fence: fence, checkpoint: { _ in .start }, logger: logger)
    }

    /// What a read of `user` must see, at least `minimum` (a write the caller just made).
    package func required(bundleID: String, userID: String, minimum: LogPosition? = nil) async -> LogPosition {
        await establishBaseline()
        return max(fence.required(bundleID: bundleID, userID: userID), minimum ?? .start)
    }

    /// What a read of everything must see.
    package func requiredForAll() async -> LogPosition {
        await establishBaseline()
        return fence.latest
    }

    /// Runs `body` on a replica that has applied `position`, else on the primary.
    package func read<T: Sendable>(
        atLeast position: LogPosition, _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await readNamingSource(atLeast: position, body).answer
    }

    /// A pool whose replica has applied `position` (the primary otherwise), for a read of several
    /// statements that must all come from one node (an export's pages).
    package func pool(atLeast position: LogPosition) async throws -> PostgresPool {
        // A statement, not nothing: a node that went away is found here, before an answer starts.
        try await readNamingSource(atLeast: position) { _ = try $0.query("SELECT 1") }.replica.map { replicas[$0] } ?? primary
    }

    /// The read, and which replica answered it (nil: the primary).
    private func readNamingSource<T: Sendable>(
        atLeast position: LogPosition,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> (answer: T, replica: Int?) {
        guard !replicas.isEmpty else { return (try await primary.withConnection(body), nil) }
        return try await Spans.child("read from a replica") { span in
            var waited = Duration.zero
            let read = try await readFromReplicas(atLeast: position, waited: &waited, body)
            if waited > .zero {
                served.withLock {
                    $0.waited += 1; $0.waitedFor += waited
                }
            }
            if let span, span.isRecording {
                span.attributes["ledger.read.source"] = read.replica.map { "replica \($0 + 1)" } ?? "primary"
                span.attributes["ledger.read.fence"] = "\(position)"
                span.attributes["ledger.replica.wait_seconds"] = waited / .seconds(1)
            }
            return read
        }
    }

    /// Each replica in turn until one has applied `position`, waiting up to `maximumWait` for
    /// one replaying; else the primary; else, with the primary away, a replica as it is.
    private func readFromReplicas<T: Sendable>(
        atLeast position: LogPosition, waited: inout Duration,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> (answer: T, replica: Int?) {
        let clock = ContinuousClock()
        let began = clock.now
        var everBehind = false
        defer { if everBehind { waited = clock.now - began } }
        let deadline = clock.now + maximumWait
        var lastFailure: PostgresError?
        while true {
            var behind = false
            let start = turn.add(1, ordering: .relaxed).oldValue
            for offset in replicas.indices {
                let index = (start + offset) % replicas.count
                guard isAwake(index, at: clock.now) else { continue }
                do {
                    if let answer = try await attempt(index, atLeast: position, body) {
                        served.withLock { $0.replica += 1 }
                        return (answer, index)
                    }
                    behind = true
                    everBehind = true
                } catch let error as PostgresError where error.isTransient {
                    // Away, or the read was cancelled by replay (a recovery conflict): another one, or the primary.
                    lastFailure = error
                    resting.withLock { $0[index] = clock.now + .seconds(1) }
                }
            }
            // Waiting is worth it only for a replica that answers and is replaying.
            guard behind, clock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(1))
        }
        do {
            let answer = try await primary.withConnection(body)
            served.withLock { $0.primary += 1 }
            return (answer, nil)
        } catch let error as PostgresError where error.isTransient {
            // The primary is away: nothing newer can be written meanwhile, so a replica's answer
            // is the best there is. Read-your-writes can only fail for a write it never received.
            for index in replicas.indices {
                if let answer = try? await attempt(index, atLeast: .start, body) {
                    served.withLock { $0.replicaBehindFence += 1 }
                    logger.warning(
                        "primary unavailable; answered from a replica behind the fence",
                        metadata: ["fence": "\(position)", "error": "\(error)"])
                    return (answer, index)
                }
            }
            throw lastFailure.map { $0.doing("reading from every replica") } ?? error
        }
    }

    /// Whether each replica answers, and how far behind the primary's checkpoint it is.
    package func status() async -> [(name: String, state: String)] {
        var result: [(String, String)] = []
        for (index, replica) in replicas.enumerated() {
            do {
                let position = try await replica.withConnection(checkpoint)
                reached.withLock { $0[index] = max($0[index], position) }
                result.append(
                    ("replica \(index + 1)", position >= fence.latest ? "ok" : "ok, replaying (at \(position), fence \(fence.latest))"))
            } catch {
                result.append(("replica \(index + 1)", "unavailable: \(error)"))
            }
        }
        return result
    }

    private func isAwake(_ index: Int, at now: ContinuousClock.Instant) -> Bool {
        resting.withLock { resting in
            guard let until = resting[index] else { return true }
            if now >= until { resting[index] = nil }
            return now >= until
        }
    }

    private func attempt<T: Sendable>(
        _ index: Int, atLeast position: LogPosition,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T? {
        let known = reached.withLock { $0[index] }
        let (answer, checked) = try await replicas[index].withConnection { connection -> (T?, LogPosition?) in
            guard known < position else { return (try body(connection), nil) }
            let now = try self.checkpoint(connection)
            return (now < position ? nil : try body(connection), now)
        }
        if let checked { reached.withLock { $0[index] = max($0[index], checked) } }
        return answer
    }

    /// At start and after missed announcements: the fence's floor is the primary's checkpoint now.
    private func establishBaseline() async {
        guard !replicas.isEmpty, fence.needsBaseline else { return }
        if let position = try? await primary.withConnection(checkpoint) { fence.advanceAll(to: position) }
    }
}
