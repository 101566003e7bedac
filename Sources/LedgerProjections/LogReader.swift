import Foundation
import LedgerEventStore
import LedgerFormats
import LedgerPostgres

/// Streams the log on its own connection and thread (`LogCopy`), a few batches ahead of the
/// thread that decodes them: `next()` returns them in order, nil at the end.
final class LogReader: @unchecked Sendable {
    private let lock = NSLock()
    private var ready: [LogRows] = []
    private var finished: Result<Void, any Error>?
    private var cancelled = false
    private let available = DispatchSemaphore(value: 0)
    private let room: DispatchSemaphore

    init(connection: PostgresConnection, batchSize: Int, excludingTypes: Set<String>, ahead: Int = 4) {
        room = DispatchSemaphore(value: ahead)
        Thread.detachNewThread { [self] in
            let result = Result {
                try LogCopy.stream(on: connection, after: .start, excludingTypes: excludingTypes, batchSize: batchSize) { batch in
                    room.wait()
                    if lock.withLock({ cancelled }) { throw CancellationError() }
                    lock.withLock { ready.append(batch) }
                    available.signal()
                }
            }
            lock.withLock { finished = result }
            available.signal()
        }
    }

    /// Lets the reading thread finish when its reader stops early (the rebuild failed).
    func cancel() {
        lock.withLock { cancelled = true }
        room.signal()
    }

    func next() throws -> LogRows? {
        available.wait()
        return try lock.withLock {
            if !ready.isEmpty {
                room.signal()
                return ready.removeFirst()
            }
            try finished!.get()
            return nil
        }
    }
}
