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

    /// A message uploaded for Apple's review, checked against Apple's limits first.
    package func uploadRetentionMessage(
        bundleID: String, id: UUID, _ message: RetentionMessage, environment: AppleEnvironment
    ) async throws {
        try await LedgerError.mapping {
            if let problem = message.problem { throw LedgerError(.invalidRetention, problem) }
            try await api.uploadMessage(id, message, in: environment, as: try key(bundleID))
        }
    }

    /// A PNG uploaded for Apple's review (`size`: FULL_SIZE or BULLET_POINT), checked first.
    package func uploadRetentionImage(
        bundleID: String, id: UUID, png: Data, size: String?, environment: AppleEnvironment
    ) async throws {
        try await LedgerError.mapping {
            if let size, !["FULL_SIZE", "BULLET_POINT"].contains(size) {
                throw LedgerError(.invalidRetention, "size is FULL_SIZE or BULLET_POINT")
            }
            if let problem = RetentionMessage.imageProblem(png) { throw LedgerError(.invalidRetention, problem) }
            try await api.uploadImage(id, png: png, size: size, in: environment, as: try key(bundleID))
        }
    }

    /// Every message and image uploaded, with Apple's review state.
    package func retentionMessages(
        bundleID: String, environment: AppleEnvironment
    ) async throws -> (messages: [RetentionMessageState], images: [RetentionImageState]) {
        try await LedgerError.mapping { try await api.messagesAndImages(in: environment, as: try key(bundleID)) }
    }

    /// Where Apple sends its realtime requests in `environment` (Apple takes a production URL only
    /// after a sandbox performance test passed).
    package func setRealtimeURL(bundleID: String, url: String, environment: AppleEnvironment) async throws {
        try await LedgerError.mapping {
            guard url.utf8.count <= 256, url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw LedgerError(.invalidRetention, "the realtime URL is an https URL of at most 256 characters")
            }
            try await api.setRealtimeURL(url, in: environment, as: try key(bundleID))
        }
    }

    /// The message Apple shows for `productID` in `locale` when the realtime endpoint fails.
    package func setDefaultRetentionMessage(
        bundleID: String, productID: String, locale: String, messageID: UUID, environment: AppleEnvironment
    ) async throws {
        try await LedgerError.mapping {
            try await api.configureDefaultMessage(
                productID: productID, locale: locale, messageID: messageID, in: environment, as: try key(bundleID))
        }
    }

    private func key(_ bundleID: String) async throws -> ServerAPICredentials {
        try Self.key(of: try await ingestor.directory.app(bundleID))
    }
}
