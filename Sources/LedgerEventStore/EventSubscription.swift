import LedgerFormats
import LedgerPostgres
import Logging

/// Follows the global log in order, batch by batch, from a position, for as long as it is iterated.
///
/// It wakes on NOTIFY (through `EventStore.runNotifications`) and on its own appends, and polls every
/// `pollInterval` as a fallback — a NOTIFY can be lost while the listener reconnects, and an event
/// held back by the snapshot fence becomes readable without any NOTIFY when an unrelated
/// transaction ends. Transient database errors are logged and retried; the position is kept.
package struct EventSubscription: AsyncSequence, Sendable {
    package typealias Element = [RecordedEvent]
    let store: EventStore
    let start: LogPosition
    let batchSize: Int
    let pollInterval: Duration
    let logger: Logger

    package func makeAsyncIterator() -> Iterator {
        Iterator(subscription: self, position: start)
    }

    package struct Iterator: AsyncIteratorProtocol {
        let subscription: EventSubscription
        /// The last position handed out: the checkpoint a consumer should store.
        package private(set) var position: LogPosition

        init(subscription: EventSubscription, position: LogPosition) {
            self.subscription = subscription
            self.position = position
        }

        /// The next non-empty batch; nil when the task is cancelled.
        package mutating func next() async throws -> [RecordedEvent]? {
            let store = subscription.store
            while !Task.isCancelled {
                let generation = store.wakeup.generation
                do {
                    let batch = try await store.readAll(after: position, limit: subscription.batchSize)
                    if let last = batch.last {
                        position = last.position
                        return batch
                    }
                } catch let error as PostgresError where error.isTransient {
                    subscription.logger.warning("subscription read failed; retrying", metadata: ["error": "\(error)"])
                }
                await store.wakeup.wait(after: generation, timeout: subscription.pollInterval)
            }
            return nil
        }
    }
}
