import Foundation
import Testing

/// Polls `condition` for up to `seconds`; records a test issue if it never holds.
public func waitUntil(seconds: Double = 20, _ condition: @Sendable () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("condition not met within \(seconds) s")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

extension Array {
    /// About `n` evenly spaced elements and the last, to keep the instants a test checks bounded.
    public func striding(_ n: Int) -> [Element] {
        guard !isEmpty else { return [] }
        var result = stride(from: 0, to: count, by: Swift.max(1, count / n)).map { self[$0] }
        result.append(self[count - 1])
        return result
    }
}
