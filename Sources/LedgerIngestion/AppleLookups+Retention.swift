import AppStore
import AppStoreServerAPI
import Foundation
import LedgerCore

/// Apple's sandbox performance test of the realtime retention endpoint, asked for an operator:
/// Apple must see the ledger answer within its threshold before it accepts a production URL.
extension AppleLookups {
    /// Points the app's sandbox realtime URL at `realtimeURL` when given, then starts Apple's
    /// performance test with requests about `originalTransactionID` (a sandbox subscription).
    package func startRetentionPerformanceTest(
        bundleID: String, originalTransactionID: String, realtimeURL: String?
    ) async throws -> PerformanceTestStarted {
        try await LedgerError.mapping {
            let key = try Self.key(of: try await ingestor.directory.app(bundleID))
            if let realtimeURL {
                guard realtimeURL.utf8.count <= 256, realtimeURL.hasPrefix("https://") || realtimeURL.hasPrefix("http://") else {
                    throw LedgerError(.invalidRequest, "realtime_url is an https URL of at most 256 characters")
                }
                try await api.setRealtimeURL(realtimeURL, in: .sandbox, as: key)
            }
            return try await api.startPerformanceTest(originalTransactionID: originalTransactionID, as: key)
        }
    }

    /// How Apple's performance test went so far (PENDING, PASS or FAIL, with response times).
    package func retentionPerformanceTest(bundleID: String, requestID: String) async throws -> PerformanceTestResult {
        try await LedgerError.mapping {
            try await api.performanceTestResult(requestID, as: try Self.key(of: try await ingestor.directory.app(bundleID)))
        }
    }
}
