import Foundation
import Hummingbird
import Synchronization

extension SimulatedGooglePlay {
    /// A refusal in Google's error envelope.
    struct GoogleError: Error {
        var status: Int
        var reason: String
        var message: String
        var retryAfter: String?

        static let notFound = GoogleError(status: 404, reason: "purchaseTokenNotFound", message: "The purchase token was not found.")
        static let otherPackage = GoogleError(
            status: 400, reason: "purchaseTokenDoesNotMatchPackageName", message: "The purchase token does not match the package name.")
        static let invalidState = GoogleError(
            status: 400, reason: "invalidPurchaseState", message: "The purchase is not in a valid state to perform the desired operation.")
        static let invalidValue = GoogleError(status: 400, reason: "invalid", message: "Invalid Value")
        static let gone = GoogleError(status: 410, reason: "purchaseTokenNoLongerValid", message: "The purchase token is no longer valid.")

        var body: [String: Any] {
            let domain = ["invalid", "purchaseTokenNotFound"].contains(reason) ? "global" : "androidpublisher"
            return ["error": ["code": status, "message": message, "errors": [["domain": domain, "reason": reason, "message": message]]]]
        }
    }

    /// androidpublisher v3 under `androidpublisher/v3/applications/{packageName}/`, read by
    /// Google's paths; a custom verb is the last segment's `:suffix`.
    func registerPublisher(on router: Router<BasicRequestContext>) {
        for method in [HTTPRequest.Method.get, .post] {
            router.on("androidpublisher/v3/applications/:package/**", method: method) { request, context in
                let body = method == .post ? Data((try await request.body.collect(upTo: 1 << 20)).readableBytesView) : Data()
                let packageName = context.parameters.get("package") ?? ""
                let segments = context.parameters.getCatchAll().map(String.init)
                let shown = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
                let (status, answer, headers) = self.answer(
                    method: method.rawValue, path: shown, authorization: request.headers[.authorization]
                ) { () throws(GoogleError) -> [String: Any] in
                    try self.route(method.rawValue, packageName, segments, query: request.uri.queryParameters, body: body)
                }
                self.remember(method.rawValue, shown, status)
                return Self.json(status, answer, headers: headers)
            }
        }
    }

    /// Injected faults first, then the bearer check, then the route.
    func answer(
        method: String, path: String, authorization: String?, _ route: () throws(GoogleError) -> [String: Any]
    ) -> (Int, [String: Any], HTTPFields) {
        let fault: Fault? = state.withLock { state in
            guard let index = state.faults.firstIndex(where: { $0.pathContains.map(path.contains) ?? true }) else { return nil }
            state.faults[index].times -= 1
            let fault = state.faults[index]
            if fault.times <= 0 { state.faults.remove(at: index) }
            return fault
        }
        if let fault {
            var headers: HTTPFields = [:]
            if let retryAfter = fault.retryAfter { headers[.retryAfter] = retryAfter }
            let reason = fault.reason ?? (fault.status == 429 ? "rateLimitExceeded" : fault.status >= 500 ? "backendError" : "invalid")
            return (fault.status, GoogleError(status: fault.status, reason: reason, message: "Injected by the simulator.").body, headers)
        }
        guard authorized(authorization) else {
            let error = GoogleError(
                status: 401, reason: "authError", message: "Request had invalid authentication credentials. Expected OAuth 2 access token.")
            return (401, error.body, [.wwwAuthenticate: "Bearer realm=\"https://accounts.google.com/\""])
        }
        do throws(GoogleError) {
            return (200, try route(), [:])
        } catch {
            return (error.status, error.body, [:])
        }
    }

    func route(
        _ method: String, _ packageName: String, _ segments: [String], query: Parameters, body: Data
    ) throws(GoogleError) -> [String: Any] {
        var path = segments
        var action: String?
        if let last = path.last, let colon = last.lastIndex(of: ":") {
            action = String(last[last.index(after: colon)...])
            path[path.count - 1] = String(last[..<colon])
        }
        let fields = (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:]
        switch (method, path.count, path.first, path.dropFirst().first, action) {
        case ("GET", 4, "purchases"?, "subscriptionsv2"?, nil):
            return try subscription(path[3], packageName).json()
        case ("POST", 4, "purchases"?, "subscriptionsv2"?, let verb?):
            return try subscriptionAction(verb, token: path[3], packageName, fields)
        case ("POST", 5, "purchases"?, "subscriptions"?, "acknowledge"?):
            let token = path[4]
            let found = try subscription(token, packageName)
            guard found.productID == path[2] else { throw .invalidValue }
            guard !found.acknowledged, found.state != SimulatedSubscription.state("PENDING") else { throw .invalidState }
            state.withLock { $0.subscriptions[token]?.acknowledged = true }
            return [:]
        case ("GET", 5, "purchases"?, "products"?, nil):
            let found = try product(path[4], packageName)
            guard found.productID == path[2] else { throw .invalidValue }
            return found.v1()
        case ("GET", 4, "purchases"?, "productsv2"?, nil):
            return try product(path[3], packageName).v2()
        case ("POST", 5, "purchases"?, "products"?, let verb?) where ["acknowledge", "consume"].contains(verb):
            let token = path[4]
            let found = try product(token, packageName)
            guard found.productID == path[2] else { throw .invalidValue }
            guard found.purchaseState == 0, verb == "consume" ? !found.consumed : !found.acknowledged else { throw .invalidState }
            state.withLock { state in
                state.products[token]?.acknowledged = true
                if verb == "consume" { state.products[token]?.consumed = true }
            }
            return [:]
        case ("GET", 2, "purchases"?, "voidedpurchases"?, nil):
            return try voidedPage(packageName, query)
        case ("POST", 2, "orders"?, _, let verb?):
            return try orderAction(verb, orderID: path[1], packageName, query: query, fields)
        default:
            throw GoogleError(status: 404, reason: "notFound", message: "No such method in the simulator.")
        }
    }

    func subscription(_ token: String, _ packageName: String) throws(GoogleError) -> SimulatedSubscription {
        guard let found = state.withLock({ $0.subscriptions[token] }) else { throw .notFound }
        guard found.packageName == packageName else { throw .otherPackage }
        guard !found.gone else {
            throw GoogleError(
                status: 410, reason: "subscriptionPurchaseNoLongerAvailable",
                message: "The subscription purchase is no longer available for query because it has been expired for too long.")
        }
        return found
    }

    func product(_ token: String, _ packageName: String) throws(GoogleError) -> SimulatedProduct {
        guard let found = state.withLock({ $0.products[token] }) else { throw .notFound }
        guard found.packageName == packageName else { throw .otherPackage }
        return found
    }

    func subscriptionAction(
        _ verb: String, token: String, _ packageName: String, _ fields: [String: Any]
    ) throws(GoogleError) -> [String: Any] {
        let found = try subscription(token, packageName)
        switch verb {
        case "revoke":
            guard let context = fields["revocationContext"] as? [String: Any], !context.isEmpty else { throw .invalidValue }
            change(token, .revoke)
            return [:]
        case "cancel":
            let type = (fields["cancellationContext"] as? [String: Any])?["cancellationType"] as? String
            guard ["USER_REQUESTED_STOP_RENEWALS", "DEVELOPER_REQUESTED_STOP_PAYMENTS"].contains(type) else { throw .invalidValue }
            guard [SimulatedSubscription.state("ACTIVE"), SimulatedSubscription.state("IN_GRACE_PERIOD")].contains(found.state) else {
                throw .invalidState
            }
            change(token, .cancel)
            if type == "DEVELOPER_REQUESTED_STOP_PAYMENTS" { state.withLock { $0.subscriptions[token]?.canceledBy = "developer" } }
            return [:]
        case "defer":
            guard let context = fields["deferralContext"] as? [String: Any], let duration = context["deferDuration"] as? String,
                duration.hasSuffix("s"), let seconds = Int(duration.dropLast()), seconds > 0
            else { throw .invalidValue }
            guard context["etag"] as? String == "etag-\(found.etag)" else {
                throw GoogleError(status: 400, reason: "invalid", message: "The etag does not match the purchase's.")
            }
            guard found.state == SimulatedSubscription.state("ACTIVE") else { throw .invalidState }
            var expiry = found.expiry.addingTimeInterval(TimeInterval(seconds))
            if context["validateOnly"] as? Bool != true {
                change(token, .deferBy(seconds: seconds))
                expiry = subscription(token)?.expiry ?? expiry
            }
            return ["itemExpiryTimeDetails": [["productId": found.productID, "expiryTime": GoogleTime.text(expiry)]]]
        default:
            throw GoogleError(status: 404, reason: "notFound", message: "No such method in the simulator.")
        }
    }
}
