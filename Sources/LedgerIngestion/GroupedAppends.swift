import LedgerEventStore
import LedgerTracing
import Synchronization

/// Group commit for appends that need no stream version: facts recorded as they happen, such
/// as the answers to Apple's realtime retention requests, which arrive by the dozen at once.
///
/// Appended one by one, each waited for its own commit and its own flush of the write-ahead
/// log, and the requests queued behind the log's lock rather than behind work. Here what
/// arrives while a group is being written joins the next group, which commits in one
/// transaction and one round trip (`EventStore.append(batch:)`). A group that is refused — an
/// event id already used, as when Apple sends a request again — is appended again one by one,
/// so each append keeps its own answer and one request's refusal costs no other its write.
package final class GroupedAppends: Sendable {
    private struct Waiting {
        var append: StreamAppend
        var waiter: GroupWaiter<AppendResult>
    }

    private let store: EventStore
    private let queue: Mutex<GroupQueue<Waiting>>
    private let deadlines = DeadlineWatch<AppendResult>()

    package init(store: EventStore, maximumGroup: Int = 64) {
        self.store = store
        self.queue = Mutex(GroupQueue(maximumGroup: maximumGroup))
    }

    /// Appends `events` to `stream` at whatever version it has, with the appends waiting beside.
    @discardableResult
    package func append(_ events: [NewEvent], to stream: String) async throws -> AppendResult {
        try await GroupWaiter<AppendResult>.wait(by: RequestDeadline.current, watch: deadlines) { waiter in
            let arrival = queue.withLock { $0.arrive(Waiting(append: StreamAppend(stream: stream, events: events), waiter: waiter)) }
            if arrival == .write { Task { await RequestDeadline.detached { await self.writeWhileWaiting() } } }
        }
    }

    /// One group at a time, for as long as appends keep arriving.
    private func writeWhileWaiting() async {
        while case .write(let group) = queue.withLock({ $0.nextGroup() }) {
            if group.count > 1, let results = try? await store.append(batch: group.map(\.append)) {
                for (waiting, result) in zip(group, results) { waiting.waiter.answer(.success(result)) }
                continue
            }
            for waiting in group {
                do {
                    waiting.waiter.answer(.success(try await store.append(waiting.append.events, to: waiting.append.stream)))
                } catch {
                    waiting.waiter.answer(.failure(error))
                }
            }
        }
    }
}
