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

extension AppStoreServerAPIClient {
    /// Upload Message: a message Apple reviews before it may be shown (409 when the id is taken).
    package func uploadMessage(
        _ id: UUID, _ message: RetentionMessage, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        _ = try await send(
            .PUT, "/inApps/v1/messaging/message/" + id.uuidString.lowercased(), body: try encoder.encode(message), in: environment,
            as: credentials, expecting: [200, 204])
    }

    /// Upload Image: a PNG without transparency, full size or for a bullet point.
    package func uploadImage(
        _ id: UUID, png: Data, size: String?, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws {
        _ = try await send(
            .PUT, "/inApps/v1/messaging/image/" + id.uuidString.lowercased(), query: size.map { [("imageSize", $0)] } ?? [], body: png,
            contentType: "image/png", in: environment, as: credentials, expecting: [200, 204])
    }

    /// Get Message List and Get Image List: every message and image with Apple's review state.
    package func messagesAndImages(
        in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws -> (messages: [RetentionMessageState], images: [RetentionImageState]) {
        let messages = try await decoded(
            MessageList.self, .GET, "/inApps/v1/messaging/message/list", in: environment, as: credentials)
        let images = try await decoded(ImageList.self, .GET, "/inApps/v1/messaging/image/list", in: environment, as: credentials)
        return (messages.messageIdentifiers ?? [], images.imageIdentifiers ?? [])
    }

    /// Configure Default Message: what Apple shows for `productID` in `locale` when the realtime
    /// endpoint fails or is late (a text message, approved).
    package func configureDefaultMessage(
        productID: String, locale: String, messageID: UUID, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws {
        let body = try JSONSerialization.data(withJSONObject: ["messageIdentifier": messageID.uuidString.lowercased()])
        _ = try await send(
            .PUT, "/inApps/v1/messaging/default/" + Self.segment(productID, "a product id") + "/" + Self.segment(locale, "a locale"),
            body: body, in: environment, as: credentials, expecting: [200, 204])
    }
}
