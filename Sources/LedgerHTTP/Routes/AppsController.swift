import AppStoreServerAPI
import Foundation
import GooglePlay
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// App and catalogue configuration: `PUT /v1/apps/{bundle_id}`, its products, and the catalogue
/// an app reads to know which product ids to offer.
struct AppsController {
    let directory: AppDirectory
    let audit: AuditLog

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.put("/apps/:bundle_id", use: configure)
        group.get("/apps/:bundle_id", use: configuration)
        group.put("/apps/:bundle_id/products/:product_id", use: defineProduct)
        group.get("/apps/:bundle_id/products", use: products)
        group.put("/apps/:bundle_id/currencies/:code", use: defineCurrency)
        group.get("/apps/:bundle_id/currencies", use: currencies)
    }

    /// The app's settings and secrets, replaced as a whole; the secrets are never answered back.
    @Sendable func configure(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let body = try await JSONBody.decode(Wire.AppBody.self, from: request, context: context)
        var settings = try Self.settings(from: body)
        // The retention rules are set apart (PUT …/retention): an app's PUT keeps them.
        settings.retention = try await directory.find(bundleID)?.settings.retention
        if let secret = body.shared_secret, secret.isEmpty || secret.utf8.count > 512 {
            throw LedgerError(.invalidSharedSecret, "shared_secret must be 1–512 bytes")
        }
        let key = try Self.serverAPIKey(body, bundleID: bundleID)
        let googleAccount = try Self.googleAccount(body)
        let before = try await directory.find(bundleID).map(Self.body)
        let after = Self.body(
            try await directory.configure(
                bundleID, settings: settings, sharedSecret: body.shared_secret, serverAPI: key, googleAccount: googleAccount))
        try await context.audit(audit, "app.configured", target: bundleID, bundleID: bundleID, before: before, after: after)
        return try JSONBody.response(after)
    }

    @Sendable func configuration(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        return try JSONBody.response(Self.body(try await directory.app(bundleID)))
    }

    /// The app's App Store Server API key, checked to be a usable key before it is stored.
    static func serverAPIKey(_ body: Wire.AppBody, bundleID: String) throws -> ServerAPICredentials? {
        try body.app_store_server_api.map { key in
            do {
                return try ServerAPICredentials(
                    issuerID: key.issuer_id, keyID: key.key_id, privateKeyPEM: key.private_key, bundleID: bundleID)
            } catch let invalid as ServerAPICredentials.Invalid {
                throw LedgerError(.invalidAppStoreServerAPI, invalid.description)
            }
        }
    }

    /// The Google service account's key file, checked to be a usable key before it is stored: its
    /// email and the file as text (the object as sent, written again with its keys sorted).
    static func googleAccount(_ body: Wire.AppBody) throws -> (email: String, keyFile: String)? {
        guard let object = body.google_play?.service_account else { return nil }
        let file = try JSONSerialization.data(withJSONObject: object, options: .sortedKeys)
        let account = try GoogleServiceAccount(keyFile: file)
        return (account.clientEmail, String(decoding: file, as: UTF8.self))
    }

    static func body(_ app: AppConfiguration) -> Wire.AppBody {
        Wire.AppBody(
            bundle_id: app.bundleID, environments: app.settings.environments.map(\.rawValue), apple_app_id: app.settings.appleAppID,
            restore_policy: app.settings.restorePolicy.rawValue, shared_secret: nil, shared_secret_configured: app.hasSharedSecret,
            consumption_policy: app.settings.consumptionPolicy.map {
                Wire.ConsumptionPolicyBody(
                    customer_consented: $0.customerConsented, refund_preference: $0.refundPreference,
                    sample_content_provided: $0.sampleContentProvided)
            },
            app_store_server_api: nil, app_store_server_api_configured: app.hasServerAPI,
            app_purchase: app.settings.appPurchase.map {
                Wire.AppPurchaseBody(
                    entitlements: $0.entitlements, originally_before_version: $0.originallyBeforeVersion,
                    originally_purchased_before: $0.originallyPurchasedBefore.map(RFC3339.string))
            },
            google_play: app.settings.googlePlay.map { google in
                Wire.GooglePlayBody(
                    package_name: google.packageName, service_account: nil, service_account_email: app.googleAccountEmail,
                    pubsub: google.pushAudience.map {
                        Wire.PubSubBody(audience: $0, service_account_email: google.pushServiceAccountEmail ?? "")
                    },
                    test_purchases: google.testPurchases)
            }, server_finishes_transactions: app.settings.serverFinishesTransactions ?? false)
    }
}
