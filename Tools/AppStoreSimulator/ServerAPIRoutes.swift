import Crypto
import Foundation
import Hummingbird
import Synchronization

/// The App Store Server API's routes on the simulator's listener, under `/production` and
/// `/sandbox` (the two base URLs the ledger is given), by Apple's paths and with Apple's shapes.
extension ServerAPISimulator {
    package func register(on router: Router<BasicRequestContext>) {
        registerAccountRoutes(on: router)
        registerSubscriptionRoutes(on: router)
        registerRetentionRoutes(on: router)
        router.get("/:endpoint/inApps/v2/history/:id") { request, context in
            try self.answer(request, context) { store, id in
                let all = try self.customerTransactions(of: id, in: store).sorted { $0.purchaseDate < $1.purchaseDate }
                return try self.revisionPage(all, request: request, store: store)
            }
        }
        router.get("/:endpoint/inApps/v2/refund/lookup/:id") { request, context in
            try self.answer(request, context) { store, id in
                let refunded = try self.customerTransactions(of: id, in: store).filter { $0.revocationDate != nil }
                return try self.revisionPage(refunded, request: request, store: store)
            }
        }
        router.get("/:endpoint/inApps/v1/transactions/:id") { request, context in
            try self.answer(request, context) { store, id in
                guard let transaction = store.transactions[id] else { throw Self.notFound }
                return ["signedTransactionInfo": try store.app.signedTransaction(transaction)]
            }
        }
        router.get("/:endpoint/inApps/v1/subscriptions/:id") { request, context in
            try self.answer(request, context) { store, id in try self.statuses(of: id, in: store) }
        }
        router.get("/:endpoint/inApps/v1/lookup/:id") { request, context in
            try self.answer(request, context) { store, orderID in
                guard let ids = store.orders[orderID] else { return ["status": 1, "signedTransactions": [String]()] }
                let signed = try ids.compactMap { id in try store.transactions[id].map { try store.app.signedTransaction($0) } }
                return ["status": 0, "signedTransactions": signed]
            }
        }
        router.post("/:endpoint/inApps/v1/notifications/history") { request, context in
            let body = try await request.body.collect(upTo: 1 << 20)
            return try self.answer(request, context) { store, _ in
                try self.historyPage(Data(body.readableBytesView), request: request, store: store)
            }
        }
        router.put("/:endpoint/inApps/v2/transactions/consumption/:id") { request, context in
            let body = try await request.body.collect(upTo: 1 << 20)
            return try self.answer(request, context, status: .accepted) { store, id in
                try self.recordConsumption(Data(body.readableBytesView), transactionID: id, store: store)
                return [:]
            }
        }
        router.post("/:endpoint/inApps/v1/notifications/test") { request, context in
            try self.answer(request, context) { store, _ in
                let token = UUID().uuidString.lowercased()
                let body = try store.app.notificationV2("TEST")
                // Delivered after the answer, as Apple does; its attempt is in the history then.
                Task {
                    await self.send(body, of: store.app); self.rememberTest(token, of: store.app)
                }
                return ["testNotificationToken": token]
            }
        }
        router.get("/:endpoint/inApps/v1/notifications/test/:id") { request, context in
            try self.answer(request, context) { store, token in
                guard let index = store.testNotifications[token], index < store.history.count else { throw Self.notFound }
                let entry = store.history[index]
                return ["signedPayload": entry.signedPayload, "sendAttempts": Self.attempts(entry)]
            }
        }
    }

    static let notFound = ScriptedError(status: 404, body: ["errorCode": 4_040_010, "errorMessage": "Transaction id not found."])

    struct ScriptedError: Error {
        var status: Int
        var retryAfter: String?
        var body: [String: any Sendable]
    }

    /// Scripted answers first; then Apple's bearer check; then `body` with the app's store and the
    /// path's identifier. Every request is remembered with its status.
    func answer(
        _ request: Request, _ context: BasicRequestContext, status: HTTPResponse.Status = .ok,
        _ body: (Store, String) throws -> [String: Any]
    ) throws -> Response {
        let environment = context.parameters.get("endpoint") ?? ""
        let path = request.uri.path
        func remember(_ code: Int) { state.withLock { $0.seen.append(Seen(path: path, at: Date(), status: code)) } }
        let scripted: Scripted? = state.withLock { $0.scripts.isEmpty ? nil : $0.scripts.removeFirst() }
        if case .error(let code, let retryAfter, let errorCode) = scripted {
            remember(code)
            var headers: HTTPFields = [.contentType: "application/json"]
            if let retryAfter { headers[.retryAfter] = retryAfter }
            let message: [String: Any] = [
                "errorCode": errorCode ?? (code == 429 ? 4_290_000 : 5_000_000),
                "errorMessage": code == 429 ? "Rate limit exceeded." : "An unknown error occurred.",
            ]
            return Response(
                status: .init(code: code), headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: message))))
        }
        guard let store = authorized(request.headers[.authorization], environment: environment) else {
            remember(401)
            return Response(status: .unauthorized)
        }
        do {
            let object = try body(store, context.parameters.get("id") ?? "")
            remember(Int(status.code))
            // Keys unsorted: sorting goes through ICU collation, the simulator's largest cost.
            let data = status == .accepted ? Data() : try JSONSerialization.data(withJSONObject: object)
            return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
        } catch let error as ScriptedError {
            remember(error.status)
            return Response(
                status: .init(code: error.status), headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: error.body))))
        }
    }

    /// Apple's check of a bearer token: ES256 by the registered key named in `kid`, issued by
    /// the key's issuer, for `appstoreconnect-v1` and the app in `bid`, for at most an hour, not
    /// expired. The app is the one `bid` names in the asked environment.
    func authorized(_ header: String?, environment: String) -> Store? {
        guard let header, header.hasPrefix("Bearer ") else { return nil }
        let parts = header.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerJSON = Self.base64URLDecode(parts[0]), let claimsJSON = Self.base64URLDecode(parts[1]),
            let signature = Self.base64URLDecode(parts[2]),
            let jwtHeader = try? JSONSerialization.jsonObject(with: headerJSON) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsJSON) as? [String: Any],
            jwtHeader["alg"] as? String == "ES256", let bundleID = claims["bid"] as? String,
            let store = state.withLock({ $0.stores[Self.storeKey(environment, bundleID)] })
        else { return nil }
        let now = Date().timeIntervalSince1970
        guard jwtHeader["kid"] as? String == store.key.keyID, claims["iss"] as? String == store.key.issuerID,
            claims["aud"] as? String == "appstoreconnect-v1",
            let issued = (claims["iat"] as? NSNumber)?.doubleValue, let expires = (claims["exp"] as? NSNumber)?.doubleValue,
            expires - issued <= 3600, issued <= now + 60, now < expires,
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            store.key.publicKey.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return nil }
        return store
    }

    func customerTransactions(of id: String, in store: Store) throws -> [SimulatedTransaction] {
        guard let customer = store.customers[id] else { throw Self.notFound }
        return (store.purchases[customer] ?? []).compactMap { store.transactions[$0] }
    }

    /// Pages of signed transactions continued by an opaque `revision` (here: the next offset).
    func revisionPage(_ transactions: [SimulatedTransaction], request: Request, store: Store) throws -> [String: Any] {
        let offset = request.uri.queryParameters.get("revision").flatMap { Int($0.dropFirst()) } ?? 0
        let page = transactions.dropFirst(offset).prefix(pageSize)
        let next = offset + page.count
        return [
            "revision": "r\(next)", "hasMore": next < transactions.count, "bundleId": store.app.bundleID,
            "appAppleId": store.app.appAppleID, "environment": store.app.environment,
            "signedTransactions": try page.map { try store.app.signedTransaction($0) },
        ]
    }

    /// Every auto-renewable subscription of the customer, by its latest transaction: status 1
    /// active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    func statuses(of id: String, in store: Store) throws -> [String: Any] {
        let subscriptions = try customerTransactions(of: id, in: store).filter { $0.type == "Auto-Renewable Subscription" }
        var latest: [String: SimulatedTransaction] = [:]
        for transaction in subscriptions
        where latest[transaction.originalTransactionID].map({ $0.purchaseDate <= transaction.purchaseDate }) ?? true {
            latest[transaction.originalTransactionID] = transaction
        }
        let last = try latest.values.sorted { $0.originalTransactionID < $1.originalTransactionID }.map { transaction -> [String: Any] in
            let renewal =
                store.renewals[transaction.originalTransactionID]
                ?? SimulatedRenewal(originalTransactionID: transaction.originalTransactionID, productID: transaction.productID)
            let status =
                if transaction.revocationDate != nil { 5 } else if renewal.gracePeriodExpiresDate.map({ $0 > Date() }) == true {
                    4
                } else if renewal.isInBillingRetryPeriod { 3 } else if (transaction.expiresDate ?? .distantFuture) <= Date() { 2 } else {
                    1
                }
            return [
                "status": status, "originalTransactionId": transaction.originalTransactionID,
                "signedTransactionInfo": try store.app.signedTransaction(transaction),
                "signedRenewalInfo": try store.app.signedRenewal(renewal),
            ]
        }
        return [
            "environment": store.app.environment, "bundleId": store.app.bundleID, "appAppleId": store.app.appAppleID,
            "data": [["subscriptionGroupIdentifier": "group.default", "lastTransactions": last]],
        ]
    }

    /// Get Notification History: entries first sent within [startDate, endDate], optionally only
    /// those never delivered or of one transaction, paged by `paginationToken`.
    func historyPage(_ body: Data, request: Request, store: Store) throws -> [String: Any] {
        guard let filter = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let start = (filter["startDate"] as? NSNumber)?.doubleValue, let end = (filter["endDate"] as? NSNumber)?.doubleValue,
            start <= end
        else {
            throw ScriptedError(status: 400, body: ["errorCode": 4_000_015, "errorMessage": "Invalid start date."])
        }
        let onlyFailures = filter["onlyFailures"] as? Bool ?? false
        let transactionID = filter["transactionId"] as? String
        let matching = store.history.filter { entry in
            let sent = entry.firstAttempt.timeIntervalSince1970 * 1000
            return sent >= start && sent <= end && (!onlyFailures || !entry.succeeded)
                && (transactionID == nil || entry.transactionID == transactionID)
        }
        let offset = request.uri.queryParameters.get("paginationToken").flatMap { Int($0.dropFirst()) } ?? 0
        let page = matching.dropFirst(offset).prefix(pageSize)
        let next = offset + page.count
        var answer: [String: Any] = [
            "hasMore": next < matching.count,
            "notificationHistory": page.map { ["signedPayload": $0.signedPayload, "sendAttempts": Self.attempts($0)] },
        ]
        if next < matching.count { answer["paginationToken"] = "p\(next)" }
        return answer
    }

    /// Send Consumption Information v2: the required fields checked as Apple does, then kept.
    func recordConsumption(_ body: Data, transactionID: String, store: Store) throws {
        guard store.transactions[transactionID] != nil else { throw Self.notFound }
        guard let fields = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            fields["customerConsented"] as? Bool == true, fields["sampleContentProvided"] is Bool, fields["deliveryStatus"] is String
        else {
            throw ScriptedError(status: 400, body: ["errorCode": 4_000_000, "errorMessage": "Invalid request."])
        }
        let flat = fields.mapValues { "\($0)" }
        mutate(store.app) { $0.consumption.append(ConsumptionAnswer(transactionID: transactionID, body: flat, receivedAt: Date())) }
    }

    func rememberTest(_ token: String, of app: SimulatedApp) {
        mutate(app) { $0.testNotifications[token] = $0.history.count - 1 }
    }

    static func attempts(_ entry: HistoryEntry) -> [[String: Any]] {
        entry.attempts.map { ["attemptDate": ms($0.date), "sendAttemptResult": $0.result] }
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
