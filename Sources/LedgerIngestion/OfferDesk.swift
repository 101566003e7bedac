import AppStore
import AppStoreServerAPI
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerProjections

/// Offers signed by the ledger for the users its history makes eligible: a product's offers are
/// declared in the catalogue with who may receive them, decided from everything the user ever
/// bought — across Apple accounts, which Apple cannot see — and signed with the app's In-App
/// Purchase key. Every signature issued is an `OfferSigned` fact in the user's stream.
package struct OfferDesk: Sendable {
    let ingestor: Ingestor

    package init(ingestor: Ingestor) { self.ingestor = ingestor }

    package enum Format: String, Sendable { case jws, legacy }

    package enum Signed: Sendable {
        case jws(String)
        case legacy(LegacyOfferSignature)
    }

    /// A promotional (or win-back) offer for `userID`, if the product's declared rule lets them
    /// have it: 404 for an unknown product or offer, 409 `not_eligible` saying why not, 422 when
    /// the app has no In-App Purchase key to sign with.
    package func sign(
        bundleID: String, userID: String, productID: String, offerID: String, format: Format,
        transactionID: String?, now: Date = Date()
    ) async throws -> Signed {
        try await LedgerError.mapping {
            let (app, product, signer) = try await prepare(bundleID: bundleID, userID: userID, productID: productID)
            guard let rule = product.offers?[offerID] else {
                throw LedgerError(
                    .unknownOffer,
                    "product \(productID) declares no offer \(offerID); declare it in the catalogue (PUT …/products/\(productID) with \"offers\")"
                )
            }
            let ledger = try await ingestor.users.ledger(bundleID: bundleID, userID: userID)
            let timeline = ledger.timeline(of: userID)
            let decision = OfferEligibility.decide(rule, entitlements: product.entitlements, timeline: timeline, now: now)
            guard decision.eligible else {
                throw LedgerError(.notEligible, "\(userID) is not eligible for offer \(offerID): \(decision.reason)")
            }
            let nonce = UUID()
            let signed: Signed
            let transaction =
                try Self.checkedTransaction(transactionID)
                ?? Self.customerTransaction(in: ledger, timeline: timeline, userID: userID, product: product, app: app)
            switch format {
            case .jws:
                signed = .jws(
                    try signer.promotionalOffer(productID: productID, offerID: offerID, transactionID: transaction, nonce: nonce, at: now))
            case .legacy:
                signed = .legacy(
                    try signer.legacyPromotionalOffer(
                        productID: productID, offerID: offerID,
                        applicationUsername: Self.applicationUsername(of: userID, in: ledger), nonce: nonce, at: now))
            }
            try await record(
                OfferSignature(
                    userID: userID, kind: format == .jws ? .promotionalOffer : .promotionalOfferLegacy, productID: productID,
                    offerID: offerID, eligible: true, nonce: nonce.uuidString.lowercased(),
                    transactionID: format == .jws ? transaction : nil, keyID: signer.keyID, signedAt: now,
                    reason: decision.reason), app: app)
            return signed
        }
    }

    /// Whether StoreKit may apply the product's introductory offer to `userID`: only if the user
    /// never held any of its entitlements, on any Apple account. Signed either way, so the app
    /// hands StoreKit the ledger's answer instead of Apple's per-account guess.
    package func introductoryEligibility(
        bundleID: String, userID: String, productID: String, transactionID: String?,
        now: Date = Date()
    ) async throws -> (eligible: Bool, signature: String, reason: String) {
        try await LedgerError.mapping {
            let (app, product, signer) = try await prepare(bundleID: bundleID, userID: userID, productID: productID)
            let ledger = try await ingestor.users.ledger(bundleID: bundleID, userID: userID)
            let timeline = ledger.timeline(of: userID)
            let decision = OfferEligibility.introductory(entitlements: product.entitlements, timeline: timeline, now: now)
            guard
                let transaction = try Self.checkedTransaction(transactionID)
                    ?? Self.customerTransaction(in: ledger, timeline: timeline, userID: userID, product: product, app: app)
            else {
                throw LedgerError(
                    .missingTransactionID,
                    "Apple needs one of the customer's transaction ids (or their app transaction id) and the ledger knows none for \(userID): send transaction_id"
                )
            }
            let nonce = UUID()
            let signature = try signer.introductoryEligibility(
                productID: productID, allow: decision.eligible, transactionID: transaction, nonce: nonce, at: now)
            try await record(
                OfferSignature(
                    userID: userID, kind: .introductoryEligibility, productID: productID, offerID: nil,
                    eligible: decision.eligible, nonce: nonce.uuidString.lowercased(), transactionID: transaction,
                    keyID: signer.keyID, signedAt: now, reason: decision.reason), app: app)
            return (decision.eligible, signature, decision.reason)
        }
    }

    /// What a legacy offer signature names the user by: the appAccountToken of their latest
    /// purchase that carries one (what the app set as the payment's applicationUsername), or "".
    static func applicationUsername(of userID: String, in ledger: AppLedger) -> String {
        ledger.transactions(ownedBy: userID).last(where: { $0.appAccountToken != nil })?.appAccountToken?.uuidString.lowercased() ?? ""
    }

    /// The app, the product and a signer with the app's key, or the error that says what is missing.
    private func prepare(
        bundleID: String, userID: String, productID: String
    ) async throws -> (AppConfiguration, ProductDefinition, OfferSigner) {
        try Identifier.userID.check(userID)
        let app = try await ingestor.directory.app(bundleID)
        guard let product = app.products.first(where: { $0.productID == productID }) else {
            throw LedgerError(.unknownProduct, "no product \(productID) is configured for \(bundleID)")
        }
        return (app, product, OfferSigner(credentials: try AppleLookups.key(of: app)))
    }

    /// A transaction id the caller names: Apple's are digits (a sandbox or Xcode one may differ), never long.
    private static func checkedTransaction(_ id: String?) throws -> String? {
        guard let id else { return nil }
        guard !id.isEmpty, id.utf8.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            throw LedgerError(.invalidTransactionID, "transaction_id is one of the customer's transaction ids (digits)")
        }
        return id
    }

    /// The customer's transaction StoreKit should see named: the user's latest purchase of a
    /// product unlocking what this one does (its subscription group, in practice), else their
    /// latest purchase of the app's, else their app transaction.
    private static func customerTransaction(
        in ledger: AppLedger, timeline: UserTimeline, userID: String, product: ProductDefinition,
        app: AppConfiguration
    ) -> String? {
        let owned = ledger.transactions(ownedBy: userID)
        let wanted = Set(product.entitlements)
        let related = owned.last { transaction in
            transaction.productID == product.productID
                || (app.catalogue.definition(of: transaction.productID, at: transaction.purchaseDate)?.entitlements ?? []).contains(
                    where: wanted.contains)
        }
        return related?.transactionID ?? owned.last?.transactionID ?? timeline.appPurchase?.appTransactionID
    }

    private func record(_ signature: OfferSignature, app: AppConfiguration) async throws {
        _ = try await ingestor.recorder.record([.offerSigned(signature)], bundleID: app.bundleID, evidence: nil, claimant: .nobody)
    }
}
