import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// Evidence in: the app's signed transactions and receipts (scope `ingest`), and Apple's
/// notifications (no key: a V2 body is authenticated by its signature, a V1 body by the shared secret).
struct IngestionController {
    let ingestor: Ingestor
    let lookups: AppleLookups
    let metrics: Metrics

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/apps/:bundle_id/transactions", use: transaction)
        group.post("/apps/:bundle_id/receipts", use: receipt)
        group.post("/apps/:bundle_id/app-transactions", use: appTransaction)
        group.post("/apps/:bundle_id/google/purchases", use: googlePurchase)
        group.post("/apps/:bundle_id/users/:user_id/google/sync", use: googleSync)
        group.put("/apps/:bundle_id/users/:user_id/app-account-tokens/:token", use: linkToken)
        group.get("/apps/:bundle_id/app-account-tokens/:token", use: tokenHolder)
    }

    /// Apple's webhook, outside the keyed group. 200 when recorded or already recorded; 4xx when
    /// forged or for another app (Apple retries failures, and should not retry those); 5xx only
    /// for transient failures here.
    func registerWebhook(on router: Router<LedgerRequestContext>) {
        router.post("/v1/apps/:bundle_id/notifications/apple", use: appleNotification)
        router.post("/v1/apps/:bundle_id/notifications/google", use: googleNotification)
    }

    /// A StoreKit 2 signed transaction the app received.
    @Sendable func transaction(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try await evidence(Wire.TransactionRequest.self, "transaction", request, context) { bundleID, body in
            try await ingestor.ingestTransaction(bundleID: bundleID, userID: body.user_id, signedTransaction: body.signed_transaction)
        }
    }

    /// An app receipt (StoreKit 1), verified with Apple.
    @Sendable func receipt(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try await evidence(Wire.ReceiptRequest.self, "receipt", request, context) { bundleID, body in
            try await ingestor.ingestReceipt(bundleID: bundleID, userID: body.user_id, receiptData: body.receipt_data)
        }
    }

    /// The app's signed AppTransaction: the purchase of the app itself.
    @Sendable func appTransaction(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try await evidence(Wire.AppTransactionRequest.self, "app_transaction", request, context) { bundleID, body in
            try await ingestor.ingestAppTransaction(
                bundleID: bundleID, userID: body.user_id, signedAppTransaction: body.signed_app_transaction)
        }
    }

    /// A Google Play purchase token the app received: the ledger asks Google about it.
    @Sendable func googlePurchase(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        try await evidence(Wire.GooglePurchaseRequest.self, "google_purchase", request, context) { bundleID, body in
            try await ingestor.claimGooglePurchase(
                bundleID: bundleID, userID: body.user_id, productID: body.product_id, token: body.purchase_token)
        }
    }

    /// The user's Google Play purchases asked of Google again (a "restore purchases" button, or
    /// support after a lost notification): what changed is recorded, the state answered.
    @Sendable func googleSync(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let state = try await ingestor.syncGooglePurchases(bundleID: bundleID, userID: userID)
        return JSONBody.response(bytes: Wire.userState(state))
    }

    /// Evidence the app sends (scope `ingest`): its body decoded, recorded by `ingest`, counted as
    /// `kind`, answered with the user's state.
    private func evidence<Body: Decodable>(
        _ type: Body.Type, _ kind: String, _ request: Request, _ context: LedgerRequestContext,
        ingest: (String, Body) async throws -> UserState
    ) async throws -> Response {
        let bundleID = try context.app(.ingest)
        let body = try await JSONBody.decode(type, from: request, context: context)
        let state = try await counted(kind) { try await ingest(bundleID, body) }
        return JSONBody.response(bytes: Wire.userState(state))
    }

    @Sendable func appleNotification(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.parameters.require("bundle_id")
        let body = try await JSONBody.bytes(request, context: context)
        let result = try await counted("notification") { try await ingestor.ingestNotification(bundleID: bundleID, body: body) }
        struct Answer: Encodable { var status: String }
        return try JSONBody.response(Answer(status: result == .recorded ? "recorded" : "already_recorded"))
    }

    /// Google Play's real-time developer notification, as Pub/Sub pushes it (authenticated by the
    /// push's OIDC token). 200 once recorded or already recorded; 401 for a token that fails
    /// Google's checks; 503 while Google or the database is away (Pub/Sub retries).
    @Sendable func googleNotification(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.parameters.require("bundle_id")
        let body = try await JSONBody.bytes(request, context: context)
        let result = try await counted("google_notification") {
            try await ingestor.ingestGoogleNotification(
                bundleID: bundleID, authorization: request.headers[.authorization], body: body)
        }
        struct Answer: Encodable { var status: String }
        return try JSONBody.response(Answer(status: result == .recorded ? "recorded" : "already_recorded"))
    }

    /// An appAccountToken link: the app says which user a token it hands StoreKit stands for, so
    /// that a transaction or notification carrying it names its user.
    @Sendable func linkToken(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let token = try Self.token(context)
        let result = try await ingestor.linkToken(token, to: userID, bundleID: bundleID)
        // Apple keeps the token on the user's purchases it knows without it (needs the app's key).
        let apple = try await lookups.sendToken(token, of: userID, bundleID: bundleID)
        return try JSONBody.response(
            Wire.TokenLink(
                app_account_token: token.uuidString.lowercased(), user_id: userID,
                status: result == .linked ? "linked" : "already_linked",
                apple: apple?.map { Wire.TokenAtApple(original_transaction_id: $0.originalTransactionID, status: $0.status) }))
    }

    /// The user an appAccountToken stands for.
    @Sendable func tokenHolder(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        let token = try Self.token(context)
        let userID = try await ingestor.tokenHolder(token, bundleID: bundleID)
        return try JSONBody.response(Wire.TokenLink(app_account_token: token.uuidString.lowercased(), user_id: userID, status: nil))
    }

    private static func token(_ context: LedgerRequestContext) throws -> UUID {
        guard let token = UUID(uuidString: try context.parameters.require("token")) else {
            throw LedgerError(.invalidAppAccountToken, "an appAccountToken is a UUID, e.g. 7e3fb20b-4cdb-47cc-936d-99d65f608138")
        }
        return token
    }

    /// Counts evidence by store, kind and result; Google's kinds are the ones named `google_…`.
    private func counted<T>(_ kind: String, _ body: () async throws -> T) async throws -> T {
        let store = kind.hasPrefix("google_") ? Store.googlePlay : .appStore
        do {
            let value = try await body()
            metrics.increment("ledger_evidence_total", ["store": store.rawValue, "kind": kind, "result": "accepted"])
            return value
        } catch let error as LedgerError {
            metrics.increment("ledger_evidence_total", ["store": store.rawValue, "kind": kind, "result": error.code.rawValue])
            throw error
        }
    }
}
