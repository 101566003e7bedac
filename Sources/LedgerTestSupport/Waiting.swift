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
