import AppStore
import Foundation
import LedgerCore
import NIOHTTP1

/// Apple's endpoints, by Apple's paths. Paged endpoints are read to the end.
extension AppStoreServerAPIClient {
    /// A paged endpoint read to its end is bounded all the same: Apple pages by 20, so this is
    /// 20,000 transactions of one customer — more means a loop, not a customer.
    static let maximumPages = 1_000

    /// Get Transaction History v2: every transaction of the customer's purchases of this app that
    /// `transactionID` belongs to, oldest first, all pages. Returns the signed transactions and the
    /// last page's revision (to continue from later).
    package func transactionHistory(
        _ transactionID: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    )
        async throws -> (signedTransactions: [String], revision: String?)
    {
        try await revisionPages(
            "/inApps/v2/history/" + Self.segment(transactionID, "a transaction id"), extra: [("sort", "ASCENDING")],
            in: environment, as: credentials)
    }

    /// Get Refund History v2: the customer's refunded transactions, all pages.
    package func refundHistory(
        _ transactionID: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    )
        async throws -> [String]
    {
        try await revisionPages(
            "/inApps/v2/refund/lookup/" + Self.segment(transactionID, "a transaction id"), extra: [],
            in: environment, as: credentials
        ).signedTransactions
    }

    /// Get Transaction Info: one signed transaction.
    package func transactionInfo(
        _ transactionID: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws -> String {
        let answer = try await decoded(
            TransactionInfoResponse.self, .GET, "/inApps/v1/transactions/" + Self.segment(transactionID, "a transaction id"),
            in: environment, as: credentials)
        guard let signed = answer.signedTransactionInfo else {
            throw LedgerError(.appleUnavailable, "Apple's transaction info answer had no signedTransactionInfo")
        }
        return signed
    }

    /// Get App Transaction Info: the app itself as bought on the account of the customer
    /// `transactionID` belongs to; nil when Apple says the customer has none (4040019).
    package func appTransactionInfo(
        _ transactionID: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    )
        async throws -> String?
    {
        do {
            return try await decoded(
                AppTransactionInfoResponse.self, .GET,
                "/inApps/v1/transactions/appTransactions/" + Self.segment(transactionID, "a transaction id"),
                in: environment, as: credentials
            ).signedAppTransactionInfo
        } catch let error as LedgerError where error.code == .appleAppTransactionNotFound {
            return nil
        }
    }

    /// Get All Subscription Statuses: each subscription group's latest transaction and renewal info.
    package func subscriptionStatuses(
        _ transactionID: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    )
        async throws -> StatusResponse
    {
        try await decoded(
            StatusResponse.self, .GET, "/inApps/v1/subscriptions/" + Self.segment(transactionID, "a transaction id"),
            in: environment, as: credentials)
    }

    /// Look Up Order ID: the transactions of the order on the customer's emailed receipt.
    package func lookUpOrder(
        _ orderID: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws -> OrderLookupResponse {
        try await decoded(
            OrderLookupResponse.self, .GET, "/inApps/v1/lookup/" + Self.segment(orderID, "an order id"), in: environment, as: credentials)
    }

    /// Get Notification History for `[start, end]` (Apple keeps 180 days), one page at a time
    /// handed to `page` as it arrives, so a long history is recorded while it is read.
    package func notificationHistory(
        from start: Date, to end: Date, onlyFailures: Bool = false, transactionID: String? = nil,
        in environment: AppleEnvironment, as credentials: ServerAPICredentials,
        page: (NotificationHistoryPage) async throws -> Void
    ) async throws {
        var request: [String: Any] = ["startDate": Self.milliseconds(start), "endDate": Self.milliseconds(end)]
        if onlyFailures { request["onlyFailures"] = true }
        if let transactionID { request["transactionId"] = try Self.segment(transactionID, "a transaction id") }
        let body = try JSONSerialization.data(withJSONObject: request, options: .sortedKeys)
        var token: String?
        for _ in 0..<Self.maximumPages {
            let current = try await decoded(
                NotificationHistoryPage.self, .POST, "/inApps/v1/notifications/history",
                query: token.map { [("paginationToken", $0)] } ?? [], body: body, in: environment, as: credentials)
            try await page(current)
            guard current.hasMore == true, let next = current.paginationToken, next != token else { return }
            token = next
        }
        throw LedgerError(.appleUnavailable, "Apple's notification history did not end after \(Self.maximumPages) pages")
    }

    /// Send Consumption Information v2 (Apple answers 202 Accepted).
    package func sendConsumption(
        _ information: ConsumptionInformation, for transactionID: String, in environment: AppleEnvironment,
        as credentials: ServerAPICredentials
    ) async throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        _ = try await send(
            .PUT, "/inApps/v2/transactions/consumption/" + Self.segment(transactionID, "a transaction id"),
            body: try encoder.encode(information), in: environment, as: credentials, expecting: [200, 202])
    }

    /// Finish Transaction: the app's server granted what `transactionID` bought (Apple: only for
    /// apps that do not call finish() in the app). Apple answers 200 with no body.
    package func finishTransaction(
        _ transactionID: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    )
        async throws
    {
        _ = try await send(
            .POST, "/inApps/v1/transactions/" + Self.segment(transactionID, "a transaction id") + "/finish", in: environment,
            as: credentials, expecting: [200, 204])
    }

    /// Request a Test Notification: Apple sends a TEST notification to the app's URL.
    package func requestTestNotification(in environment: AppleEnvironment, as credentials: ServerAPICredentials) async throws -> String {
        try await decoded(TestNotificationToken.self, .POST, "/inApps/v1/notifications/test", in: environment, as: credentials)
            .testNotificationToken
    }

    /// Get Test Notification Status: the test notification and how its delivery went.
    package func testNotificationStatus(
        _ token: String, in environment: AppleEnvironment, as credentials: ServerAPICredentials
    )
        async throws -> TestNotificationStatus
    {
        try await decoded(
            TestNotificationStatus.self, .GET, "/inApps/v1/notifications/test/" + Self.segment(token, "a test notification token"),
            in: environment, as: credentials)
    }

    /// The pages of an endpoint that continues by `revision` until `hasMore` is false.
    private func revisionPages(
        _ path: String, extra: [(String, String)], in environment: AppleEnvironment, as credentials: ServerAPICredentials
    )
        async throws -> (signedTransactions: [String], revision: String?)
    {
        var signed: [String] = []
        var revision: String?
        for _ in 0..<Self.maximumPages {
            let query = extra + (revision.map { [("revision", $0)] } ?? [])
            let page = try await decoded(SignedTransactionPage.self, .GET, path, query: query, in: environment, as: credentials)
            signed += page.signedTransactions ?? []
            let next = page.revision
            guard page.hasMore == true, let next, next != revision else { return (signed, next ?? revision) }
            revision = next
        }
        throw LedgerError(.appleUnavailable, "Apple's history did not end after \(Self.maximumPages) pages")
    }

    /// One request to Apple (`send`), its answer decoded as `type`.
    func decoded<T: Decodable>(
        _ type: T.Type, _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: Data? = nil,
        in environment: AppleEnvironment, as credentials: ServerAPICredentials
    ) async throws -> T {
        try decode(type, try await send(method, path, query: query, body: body, in: environment, as: credentials))
    }

    /// An answer that is not the JSON Apple documents is treated as Apple not answering usefully.
    func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw LedgerError(.appleUnavailable, "Apple's answer was not the documented \(type) JSON")
        }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
