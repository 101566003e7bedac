import Synchronization

/// A value behind a lock that closures can capture and share (a `Mutex` is non-copyable, so
/// escaping task closures cannot capture a local one).
package final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    package init(_ value: Value) { mutex = Mutex(value) }
    package var value: Value { mutex.withLock { $0 } }
    @discardableResult
    package func withLock<R: Sendable>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }
}
