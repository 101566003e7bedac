import AppStore
import Foundation
import LedgerCore
import NIOHTTP1

/// Apple's Retention Messaging endpoints the ledger calls for an operator: where Apple sends its
/// realtime requests, and the sandbox performance test that must pass before a production URL
/// may be set. Same key, same bearer token as the App Store Server API.
extension AppStoreServerAPIClient {
    /// Configure Realtime URL (at most 256 characters; Apple refuses a production URL until a
    /// performance test passed).
    package func setRealtimeURL(_ url: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials) async throws {
        let body = try JSONSerialization.data(withJSONObject: ["realtimeURL": url], options: [.sortedKeys, .withoutEscapingSlashes])
        _ = try await send(.PUT, "/inApps/v1/messaging/realtime/url", body: body, in: environment, as: credentials, expecting: [200, 204])
    }

    /// Initiate Performance Test (sandbox): Apple sends signed realtime requests for
    /// `originalTransactionID` to the realtime URL at its concurrency.
    package func startPerformanceTest(
        originalTransactionID: String, as credentials: ServerAPICredentials
    ) async throws -> PerformanceTestStarted {
        let body = try JSONSerialization.data(withJSONObject: ["originalTransactionId": originalTransactionID])
        return try await decoded(
            PerformanceTestStarted.self, .POST, "/inApps/v1/messaging/performanceTest", body: body, in: .sandbox, as: credentials)
    }

    /// Get Performance Test Results: PENDING until every request was answered or failed.
    package func performanceTestResult(_ requestID: String, as credentials: ServerAPICredentials) async throws -> PerformanceTestResult {
        try await decoded(
            PerformanceTestResult.self, .GET,
            "/inApps/v1/messaging/performanceTest/result/" + Self.segment(requestID, "a performance test id"), in: .sandbox,
            as: credentials)
    }
}

/// Apple's `PerformanceTestConfig`.
package struct PerformanceTestConfig: Codable, Sendable, Equatable {
    package var maxConcurrentRequests: Int?
    package var totalRequests: Int?
    /// Milliseconds.
    package var totalDuration: Int?
    /// Milliseconds: a slower answer is a failure.
    package var responseTimeThreshold: Int?
    /// Percent.
    package var successRateThreshold: Int?
}

package struct PerformanceTestStarted: Codable, Sendable {
    package var config: PerformanceTestConfig?
    package var requestId: String
}

/// Apple's `PerformanceTestResultResponse`; `failures` by `SendAttemptResult`.
package struct PerformanceTestResult: Codable, Sendable {
    package struct ResponseTimes: Codable, Sendable, Equatable {
        package var average: Int?
        package var p50: Int?
        package var p90: Int?
        package var p95: Int?
        package var p99: Int?
    }
    package var config: PerformanceTestConfig?
    package var target: String?
    /// PENDING, PASS or FAIL.
    package var result: String
    package var successRate: Int?
    package var numPending: Int?
    package var responseTimes: ResponseTimes?
    package var failures: [String: Int]?
}
