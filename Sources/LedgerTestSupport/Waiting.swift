import Foundation
import Testing

/// Polls `condition` for up to `seconds`; records a test issue if it never holds.
package func waitUntil(seconds: Double = 20, _ condition: @Sendable () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("condition not met within \(seconds) s")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Whether `condition` holds within `seconds`, polled every 100 ms: for work a background loop does
/// (an acknowledgement, a finish) — a bound for a hang, not a measure of speed.
package func eventually(within seconds: Int = 120, _ condition: () -> Bool) async throws -> Bool {
    for _ in 0..<(seconds * 10) {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(100))
    }
    return condition()
}
