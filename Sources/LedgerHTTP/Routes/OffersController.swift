import AppStoreServerAPI
import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// Offers signed for a user the ledger's history makes eligible (scope `ingest`: the game server
/// asks on its player's behalf): a promotional offer as StoreKit 2's JWS or the legacy
/// SKPaymentDiscount fields, and an introductory-offer eligibility.
struct OffersController {
    let offers: OfferDesk

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/apps/:bundle_id/users/:user_id/offers/sign", use: sign)
        group.post("/apps/:bundle_id/users/:user_id/offers/introductory-eligibility", use: introductoryEligibility)
    }

    @Sendable func sign(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let body = try await JSONBody.decode(Wire.OfferSignRequest.self, from: request, context: context)
        guard let format = OfferDesk.Format(rawValue: body.format ?? "jws") else {
            throw LedgerError(.invalidFormat, "format is jws (StoreKit 2, iOS 18.4+) or legacy (SKPaymentDiscount)")
        }
        switch try await offers.sign(
            bundleID: bundleID, userID: userID, productID: body.product_id, offerID: body.offer_id,
            format: format, transactionID: body.transaction_id)
        {
        case .jws(let signature):
            return try JSONBody.response(Wire.OfferJWS(signature: signature))
        case .legacy(let legacy):
            return try JSONBody.response(
                Wire.LegacyOffer(
                    key_id: legacy.keyID, nonce: legacy.nonce, timestamp: legacy.timestamp,
                    signature: legacy.signature, application_username: legacy.applicationUsername))
        }
    }

    @Sendable func introductoryEligibility(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.ingest)
        let body = try await JSONBody.decode(Wire.IntroductoryEligibilityRequest.self, from: request, context: context)
        let answer = try await offers.introductoryEligibility(
            bundleID: bundleID, userID: userID, productID: body.product_id,
            transactionID: body.transaction_id)
        return try JSONBody.response(
            Wire.IntroductoryEligibility(eligible: answer.eligible, signature: answer.signature, reason: answer.reason))
    }
}

extension Wire {
    struct OfferSignRequest: Decodable {
        var product_id: String
        var offer_id: String
        /// `jws` (default) or `legacy`.
        var format: String?
        var transaction_id: String?
    }

    struct OfferJWS: Encodable { var signature: String }

    /// What `SKPaymentDiscount` takes, and the `applicationUsername` the payment must carry.
    struct LegacyOffer: Encodable {
        var key_id: String
        var nonce: String
        var timestamp: Int64
        var signature: String
        var application_username: String
    }

    struct IntroductoryEligibilityRequest: Decodable {
        var product_id: String
        var transaction_id: String?
    }

    struct IntroductoryEligibility: Encodable {
        var eligible: Bool
        var signature: String
        var reason: String
    }
}
