import Foundation
import Hummingbird

/// The App Store Server API's endpoints about a customer's account rather than one purchase
/// history, by Apple's paths and with Apple's shapes and errors.
extension ServerAPISimulator {
    static let noAppTransaction = ScriptedError(
        status: 404, body: ["errorCode": 4_040_019, "errorMessage": "No AppTransaction exists for the customer."])

    func registerAccountRoutes(on router: Router<BasicRequestContext>) {
        // Finish Transaction: 200 with no body; an unknown transaction is Apple's 4040010.
        router.post("/:endpoint/inApps/v1/transactions/:id/finish") { request, context in
            try self.answer(request, context) { store, id in
                guard store.transactions[id] != nil else { throw Self.notFound }
                self.mutate(store.app) { $0.finished[id, default: 0] += 1 }
                return [:]
            }
        }
        // Get App Transaction Info: the app bought on the account of any of the customer's transactions.
        router.get("/:endpoint/inApps/v1/transactions/appTransactions/:id") { request, context in
            try self.answer(request, context) { store, id in
                guard let customer = store.customers[id] else { throw Self.notFound }
                guard let appTransaction = store.appTransactions[customer] else { throw Self.noAppTransaction }
                return ["signedAppTransactionInfo": try store.app.signedAppTransaction(appTransaction)]
            }
        }
    }
}

/// Apple's subscription endpoints that change what Apple knows: renewal-date extensions (with
/// Apple's limits and errors, and the notifications Apple then sends) and Set App Account Token.
extension ServerAPISimulator {
    static func refusal(_ status: Int, _ code: Int, _ message: String) -> ScriptedError {
        ScriptedError(status: status, body: ["errorCode": code, "errorMessage": message])
    }

    func registerSubscriptionRoutes(on router: Router<BasicRequestContext>) {
        router.put("/:endpoint/inApps/v1/subscriptions/extend/:id") { request, context in
            let body = try await Self.json(request)
            return try self.answer(request, context) { store, original in try self.extend(original, body: body, store: store) }
        }
        router.post("/:endpoint/inApps/v1/subscriptions/extend/mass") { request, context in
            let body = try await Self.json(request)
            return try self.answer(request, context) { store, _ in try self.extendAll(body: body, store: store) }
        }
        router.get("/:endpoint/inApps/v1/subscriptions/extend/mass/:product/:id") { request, context in
            try self.answer(request, context) { store, requestID in
                guard let done = store.massExtensions[requestID], done.productID == context.parameters.get("product") else {
                    throw Self.refusal(400, 4_000_011, "Invalid request identifier.")
                }
                return [
                    "requestIdentifier": requestID, "complete": true, "completeDate": ms(done.completed),
                    "succeededCount": done.succeeded, "failedCount": done.failed,
                ]
            }
        }
        router.put("/:endpoint/inApps/v1/transactions/:id/appAccountToken") { request, context in
            let body = try await Self.json(request)
            return try self.answer(request, context) { store, original in
                let subscription = try Self.original(original, in: store)
                guard let text = body["appAccountToken"] as? String, let token = UUID(uuidString: text) else {
                    throw Self.refusal(400, 4_000_183, "Invalid request. The app account token field must be a valid UUID.")
                }
                guard subscription.ownership != "FAMILY_SHARED" else {
                    throw Self.refusal(400, 4_000_185, "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
                }
                self.mutate(store.app) { store in
                    for (id, transaction) in store.transactions where transaction.originalTransactionID == original {
                        store.transactions[id]?.appAccountToken = token
                    }
                }
                return [:]
            }
        }
    }

    /// The original transaction `id` names, or Apple's error for an unknown or non-original id.
    static func original(_ id: String, in store: Store) throws -> SimulatedTransaction {
        guard let transaction = store.transactions[id] else { throw notFound }
        guard transaction.originalTransactionID == id else {
            throw refusal(400, 4_000_187, "Invalid request. The transaction ID provided is not an original transaction ID.")
        }
        return transaction
    }

    static func checkExtension(_ body: [String: Any]) throws -> (days: Int, reason: Int, request: String) {
        guard let days = body["extendByDays"] as? Int, (1...90).contains(days) else {
            throw refusal(400, 4_000_009, "Invalid extend by days value.")
        }
        guard let reason = body["extendReasonCode"] as? Int, (0...3).contains(reason) else {
            throw refusal(400, 4_000_010, "Invalid extend reason code.")
        }
        guard let request = body["requestIdentifier"] as? String, !request.isEmpty else {
            throw refusal(400, 4_000_011, "Invalid request identifier.")
        }
        return (days, reason, request)
    }

    /// One subscription's latest period moved `extendByDays` later — at most twice in 365 days,
    /// never a family-shared one, a retried request id answered as before — then the
    /// RENEWAL_EXTENDED notification Apple sends.
    func extend(_ original: String, body: [String: Any], store: Store) throws -> [String: Any] {
        let first = try Self.original(original, in: store)
        let (days, _, requestID) = try Self.checkExtension(body)
        guard first.ownership != "FAMILY_SHARED" else {
            throw Self.refusal(403, 4_030_007, "Family Sharing subscriptions are not eligible for a renewal date extension.")
        }
        let earlier = store.extensions[original] ?? []
        let retry = earlier.contains { $0.requestID == requestID }
        if !retry, earlier.filter({ Date().timeIntervalSince($0.at) < 365 * 86_400 }).count >= 2 {
            throw Self.refusal(403, 4_030_005, "The subscription has already received the maximum number of renewal date extensions.")
        }
        guard
            var latest = store.transactions.values.filter({ $0.originalTransactionID == original }).max(by: {
                $0.purchaseDate < $1.purchaseDate
            }),
            let expires = latest.expiresDate, latest.revocationDate == nil
        else {
            throw Self.refusal(403, 4_030_004, "The subscription is not eligible for a renewal date extension.")
        }
        if !retry {
            latest.expiresDate = expires.addingTimeInterval(Double(days) * 86_400)
            mutate(store.app) { store in
                store.transactions[latest.transactionID] = latest
                store.extensions[original, default: []].append((requestID, Date()))
            }
            let app = store.app, id = latest.transactionID
            if let notification = try? app.notificationV2("RENEWAL_EXTENDED", body: .data(transaction: latest, renewal: nil)) {
                Task { _ = await self.send(notification, of: app, transactionID: id) }
            }
        }
        return [
            "originalTransactionId": original, "webOrderLineItemId": "w" + latest.transactionID, "success": true,
            "effectiveDate": ms(Date()),
        ]
    }

    /// Every active subscription of the product (in the storefronts named) extended, then the
    /// RENEWAL_EXTENSION / SUMMARY notification.
    func extendAll(body: [String: Any], store: Store) throws -> [String: Any] {
        let (days, _, requestID) = try Self.checkExtension(body)
        guard let productID = body["productId"] as? String else { throw Self.refusal(400, 4_000_023, "Invalid product id.") }
        let storefronts = body["storefrontCountryCodes"] as? [String] ?? []
        let now = Date()
        var latest: [String: SimulatedTransaction] = [:]
        for transaction in store.transactions.values where transaction.productID == productID {
            if latest[transaction.originalTransactionID].map({ $0.purchaseDate < transaction.purchaseDate }) ?? true {
                latest[transaction.originalTransactionID] = transaction
            }
        }
        let active = latest.values.filter {
            ($0.expiresDate ?? .distantPast) > now && $0.revocationDate == nil
                && (storefronts.isEmpty || storefronts.contains($0.storefront ?? ""))
        }
        if store.massExtensions[requestID] == nil {
            mutate(store.app) { store in
                for var transaction in active {
                    transaction.expiresDate = transaction.expiresDate?.addingTimeInterval(Double(days) * 86_400)
                    store.transactions[transaction.transactionID] = transaction
                }
                store.massExtensions[requestID] = MassExtension(productID: productID, succeeded: active.count, failed: 0, completed: now)
            }
            let app = store.app
            if let summary = try? app.notificationV2(
                "RENEWAL_EXTENSION", subtype: "SUMMARY",
                body: .summary(
                    productID: productID, requestIdentifier: requestID, storefronts: storefronts, succeeded: active.count, failed: 0))
            {
                Task { _ = await self.send(summary, of: app) }
            }
        }
        return ["requestIdentifier": requestID]
    }

    static func json(_ request: Request) async throws -> [String: Any] {
        let body = try await request.body.collect(upTo: 1 << 20)
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:]
    }
}
