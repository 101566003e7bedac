import AppStoreServerAPI
import Foundation
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
        group.put("/apps/:bundle_id") { request, context in
            let bundleID = try context.app(.admin)
            let body = try await JSONBody.decode(Wire.AppBody.self, from: request, context: context)
            let settings = try Self.settings(from: body)
            if let secret = body.shared_secret, secret.isEmpty || secret.utf8.count > 512 {
                throw LedgerError(.invalidSharedSecret, "shared_secret must be 1–512 bytes")
            }
            let key = try body.app_store_server_api.map { key in
                do {
                    return try ServerAPICredentials(issuerID: key.issuer_id, keyID: key.key_id, privateKeyPEM: key.private_key, bundleID: bundleID)
                } catch let invalid as ServerAPICredentials.Invalid {
                    throw LedgerError(.invalidAppStoreServerAPI, invalid.description)
                }
            }
            let before = try await directory.find(bundleID).map(Self.body)
            let after = Self.body(try await directory.configure(bundleID, settings: settings, sharedSecret: body.shared_secret, serverAPI: key))
            try await context.audit(audit, "app.configured", target: bundleID, bundleID: bundleID, before: before, after: after)
            return try JSONBody.response(after)
        }
        group.get("/apps/:bundle_id") { _, context in
            let bundleID = try context.app(.read)
            return try JSONBody.response(Self.body(try await directory.app(bundleID)))
        }
        group.put("/apps/:bundle_id/products/:product_id") { request, context in
            let bundleID = try context.app(.admin)
            let productID = try context.parameters.require("product_id")
            let body = try await JSONBody.decode(Wire.ProductBody.self, from: request, context: context)
            let definition = try Self.definition(productID, body)
            let before = try await directory.find(bundleID)?.products.first { $0.productID == productID }.map(Wire.ProductBody.init)
            _ = try await directory.define(definition, in: bundleID)
            try await context.audit(
                audit, "product.defined", target: "\(bundleID)/products/\(productID)", bundleID: bundleID, before: before,
                after: Wire.ProductBody(definition))
            return try JSONBody.response(Wire.ProductBody(definition))
        }
        group.get("/apps/:bundle_id/products") { _, context in
            let bundleID = try context.app(.read)
            struct Products: Encodable { var products: [Wire.ProductBody] }
            return try JSONBody.response(Products(products: try await directory.app(bundleID).products.map(Wire.ProductBody.init)))
        }
    }

    static func settings(from body: Wire.AppBody) throws -> AppSettings {
        let names = body.environments ?? ["Production", "Sandbox"]
        let environments = try names.map { name in
            guard let environment = AppleEnvironment(rawValue: name) else {
                throw LedgerError(.invalidEnvironment, "environments are Production, Sandbox, Xcode or LocalTesting, not \(name)")
            }
            return environment
        }
        guard !environments.isEmpty else { throw LedgerError(.invalidEnvironment, "name at least one environment") }
        if environments.contains(.production), environments.contains(where: { $0 == .xcode || $0 == .localTesting }) {
            throw LedgerError(.invalidEnvironment, "Xcode and LocalTesting data are never accepted beside Production")
        }
        let policy =
            try body.restore_policy.map { name in
                guard let policy = RestorePolicy(rawValue: name) else {
                    throw LedgerError(.invalidRestorePolicy, "restore_policy is transfer, keep or transfer_if_no_active")
                }
                return policy
            } ?? .transfer
        if let id = body.apple_app_id, id <= 0 { throw LedgerError(.invalidAppleAppID, "apple_app_id is a positive number") }
        let consumption = try body.consumption_policy.map { given in
            if let preference = given.refund_preference, !ConsumptionPolicy.refundPreferences.contains(preference) {
                throw LedgerError(.invalidConsumptionPolicy, "refund_preference is DECLINE, GRANT_FULL or GRANT_PRORATED")
            }
            return ConsumptionPolicy(
                customerConsented: given.customer_consented, refundPreference: given.refund_preference,
                sampleContentProvided: given.sample_content_provided ?? false)
        }
        return AppSettings(
            environments: environments, appleAppID: body.apple_app_id, restorePolicy: policy, consumptionPolicy: consumption,
            appPurchase: try body.app_purchase.map(Self.appPurchase))
    }

    static func appPurchase(_ body: Wire.AppPurchaseBody) throws -> AppPurchaseRule {
        for name in body.entitlements { try Identifier.appPurchaseEntitlement.check(name) }
        guard !body.entitlements.isEmpty else {
            throw LedgerError(.invalidAppPurchase, "app_purchase.entitlements names at least one entitlement")
        }
        var before: Date?
        if let text = body.originally_purchased_before {
            guard let date = RFC3339.parseInstant(text) else {
                throw LedgerError(.invalidAppPurchase, "originally_purchased_before is an RFC 3339 time or a date (2025-06-01)")
            }
            before = date
        }
        if let version = body.originally_before_version,
            version.isEmpty || version.utf8.count > 64 || !version.allSatisfy({ $0.isNumber || $0 == "." || $0.isLetter })
        {
            throw LedgerError(.invalidAppPurchase, "originally_before_version is a version such as 2.0 or a build number")
        }
        guard body.originally_before_version != nil || before != nil else {
            throw LedgerError(.invalidAppPurchase, "app_purchase needs originally_before_version, originally_purchased_before, or both")
        }
        return AppPurchaseRule(entitlements: body.entitlements, originallyBeforeVersion: body.originally_before_version, originallyPurchasedBefore: before)
    }

    static func definition(_ productID: String, _ body: Wire.ProductBody) throws -> ProductDefinition {
        guard let type = ProductType(rawValue: body.type) else {
            throw LedgerError(.invalidProductType, "type is one of \(ProductType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard !productID.isEmpty, productID.unicodeScalars.count <= 255, !productID.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw LedgerError(.invalidProductID, "product ids are 1–255 characters without control characters")
        }
        let grants = body.grants ?? [:]
        guard grants.allSatisfy({ !$0.key.isEmpty && $0.value > 0 }) else {
            throw LedgerError(.invalidGrants, "grants map currency names to positive amounts per unit")
        }
        // The same gate as every identifier: a NUL cannot be stored at all, and other control
        // characters would split what the ledger joins with them.
        for entitlement in body.entitlements ?? [] { try Identifier.productEntitlement.check(entitlement) }
        for currency in grants.keys { try Identifier.productCurrency.check(currency) }
        var duration: ISODuration?
        if let text = body.duration {
            guard let parsed = ISODuration(text) else { throw LedgerError(.invalidDuration, "duration is ISO 8601, e.g. P30D or P1M") }
            duration = parsed
        }
        if type == .nonRenewing, duration == nil {
            throw LedgerError(.invalidDuration, "a non_renewing product needs a duration (e.g. P30D)")
        }
        return ProductDefinition(
            productID: productID, type: type, entitlements: body.entitlements ?? [], grants: grants, duration: duration,
            offers: try body.offers.map(Self.offers))
    }

    /// Offer ids as App Store Connect allows them (letters, digits, `.`, `_`, `-`), each with a rule.
    static func offers(_ given: [String: Wire.OfferBody]) throws -> [String: OfferRule] {
        try given.reduce(into: [:]) { rules, entry in
            let (id, body) = entry
            guard !id.isEmpty, id.utf8.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
                throw LedgerError(.invalidOffer, "offer ids are 1–64 letters, digits, '.', '_' or '-', as set up in App Store Connect")
            }
            guard let eligible = OfferRule.Eligible(rawValue: body.eligible) else {
                throw LedgerError(.invalidOffer, "offer \(id): eligible is anyone, new, active or lapsed")
            }
            var lapsedFor: ISODuration?
            if let text = body.lapsed_for {
                guard eligible == .lapsed, let duration = ISODuration(text) else {
                    throw LedgerError(.invalidOffer, "offer \(id): lapsed_for is an ISO 8601 duration (P30D) and goes with eligible lapsed")
                }
                lapsedFor = duration
            }
            rules[id] = OfferRule(eligible: eligible, lapsedFor: lapsedFor)
        }
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
            })
    }
}
