import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// The app's catalogue: each product's type, what it grants and its offers (defined by `admin`),
/// read by the app to know which product ids to offer.
extension AppsController {
    @Sendable func defineProduct(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let productID = try context.parameters.require("product_id")
        let body = try await JSONBody.decode(Wire.ProductBody.self, from: request, context: context)
        let definition = try Self.definition(productID, body)
        let before = try await directory.find(bundleID)?.products.first { $0.key == definition.key }.map(Wire.ProductBody.init)
        _ = try await directory.define(definition, in: bundleID)
        try await context.audit(
            audit, "product.defined", target: "\(bundleID)/products/\(productID)", bundleID: bundleID, before: before,
            after: Wire.ProductBody(definition))
        return try JSONBody.response(Wire.ProductBody(definition))
    }

    @Sendable func products(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        struct Products: Encodable { var products: [Wire.ProductBody] }
        return try JSONBody.response(Products(products: try await directory.app(bundleID).products.map(Wire.ProductBody.init)))
    }

    static func definition(_ productID: String, _ body: Wire.ProductBody) throws -> ProductDefinition {
        guard let store = Store(rawValue: body.store ?? Store.appStore.rawValue) else {
            throw LedgerError(.invalidStore, "store is app_store or google_play")
        }
        guard let type = ProductType(rawValue: body.type) else {
            throw LedgerError(.invalidProductType, "type is one of \(ProductType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard !productID.isEmpty, productID.unicodeScalars.count <= 255,
            !productID.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
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
        if body.grants_on_offers != nil, type != .autoRenewable {
            throw LedgerError(.invalidGrants, "grants_on_offers is for auto_renewable products: only a subscription has offer periods")
        }
        return ProductDefinition(
            productID: productID, type: type, entitlements: body.entitlements ?? [], grants: grants, duration: duration,
            offers: try body.offers.map(Self.offers), store: store, grantsOnOffers: body.grants_on_offers)
    }

    /// Offer ids as App Store Connect allows them (letters, digits, `.`, `_`, `-`), each with a rule.
    static func offers(_ given: [String: Wire.OfferBody]) throws -> [String: OfferRule] {
        try given.reduce(into: [:]) { rules, entry in
            let (id, body) = entry
            guard !id.isEmpty, id.utf8.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
            else {
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
}
