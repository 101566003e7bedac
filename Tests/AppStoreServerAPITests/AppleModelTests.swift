import AppStoreServerAPI
import Foundation
import Testing

/// Apple's own response bodies and signing key (../shared/fixtures/apple/app-store-server-library)
/// decode into our models and credentials. Skipped, saying why, when the fixtures are absent; the
/// same shapes are covered on the simulator's answers by `ServerAPIClientTests`.
@Suite struct AppleModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/fixtures/apple/app-store-server-library").standardizedFileURL
    static let available = FileManager.default.fileExists(atPath: fixtures.appendingPathComponent("models").path)

    static func model<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(contentsOf: fixtures.appendingPathComponent("models/\(name).json")))
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func historyAndRefundPagesDecode() throws {
        let history = try Self.model(SignedTransactionPage.self, "transactionHistoryResponse")
        #expect(history.revision == "revision_output" && history.hasMore == true && history.appAppleId == 323232)
        #expect(history.signedTransactions == ["signed_transaction_value", "signed_transaction_value2"])
        let refunds = try Self.model(SignedTransactionPage.self, "getRefundHistoryResponse")
        #expect(refunds.signedTransactions?.count == 2 && refunds.hasMore == true)
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func retentionPerformanceTestAnswersDecode() throws {
        let started = try Self.model(PerformanceTestStarted.self, "performanceTestResponse")
        #expect(started.requestId == "c4b87a1d-2e3f-4a5b-9c6d-7e8f9a0b1c2d" && started.config?.responseTimeThreshold == 500)
        let result = try Self.model(PerformanceTestResult.self, "performanceTestResultResponse")
        #expect(result.result == "PASS" && result.successRate == 98 && result.numPending == 0)
        #expect(result.responseTimes?.p99 == 400 && result.failures == ["TIMED_OUT": 1, "NO_RESPONSE": 1])
        #expect(result.config?.maxConcurrentRequests == 10 && result.target == "https://example.com/retention")
        let messages = try Self.model(MessageList.self, "getMessageListResponse").messageIdentifiers ?? []
        #expect(messages.map(\.messageIdentifier) == ["a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"] && messages.first?.messageState == "APPROVED")
        let images = try Self.model(ImageList.self, "getImageListResponse").imageIdentifiers ?? []
        #expect(images.first?.imageSize == "FULL_SIZE" && images.first?.imageState == "APPROVED")
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func statusesOrdersAndNotificationHistoryDecode() throws {
        let statuses = try Self.model(StatusResponse.self, "getAllSubscriptionStatusesResponse")
        #expect(statuses.data?.count == 2)
        #expect(statuses.data?[0].lastTransactions?.map(\.status) == [1, 5])
        #expect(statuses.data?[1].lastTransactions?[0].signedRenewalInfo == "signed_renewal_three")
        let order = try Self.model(OrderLookupResponse.self, "lookupOrderIdResponse")
        #expect(order.status == 1 && order.signedTransactions?.count == 2)
        let history = try Self.model(NotificationHistoryPage.self, "getNotificationHistoryResponse")
        #expect(history.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a" && history.hasMore == true)
        #expect(history.notificationHistory?[0].sendAttempts?.map(\.sendAttemptResult) == ["NO_RESPONSE", "SUCCESS"])
        #expect(
            try Self.model(TransactionInfoResponse.self, "transactionInfoResponse").signedTransactionInfo == "signed_transaction_info_value"
        )
        #expect(
            try Self.model(TestNotificationToken.self, "requestTestNotificationResponse").testNotificationToken
                == "ce3af791-365e-4c60-841b-1674b43c1609")
        #expect(try Self.model(TestNotificationStatus.self, "getTestNotificationStatusResponse").sendAttempts?.count == 2)
    }

    @Test(.enabled(if: available, "needs ../shared/fixtures/apple (absent in a clone elsewhere)"))
    func applesTestSigningKeyIsAcceptedAsAnInAppPurchaseKey() throws {
        let pem = try String(contentsOf: Self.fixtures.appendingPathComponent("certs/testSigningKey.p8"), encoding: .utf8)
        let credentials = try ServerAPICredentials(issuerID: UUID().uuidString, keyID: "keyId", privateKeyPEM: pem, bundleID: "com.example")
        #expect(try BearerTokens().token(for: credentials).split(separator: ".").count == 3)
    }
}
