import Foundation
import LedgerCore
import LedgerFormats

/// A StoreKit 2 transaction (`JWSTransactionDecodedPayload`) as the domain's facts, plus the
/// fields that decide which event it becomes. Unknown enum values stay raw strings: Apple adds
/// values every year.
package struct DecodedTransaction: Sendable, Equatable {
    package var facts: TransactionFacts
    /// "Auto-Renewable Subscription", "Non-Consumable", "Consumable", "Non-Renewing Subscription".
    package var type: String?
    /// "PURCHASE" or "RENEWAL".
    package var transactionReason: String?
    /// "REFUND_FULL", "REFUND_PRORATED", "FAMILY_REVOKE".
    package var revocationType: String?
    package var revocationPercentage: Int?

    init(_ payload: JSONTree, environment: AppleEnvironment, signedDate: Date) throws {
        guard let fields = SignedFields(payload) else {
            throw LedgerError(.malformed, "the transaction payload is not a JSON object")
        }
        guard let transactionID = fields.string("transactionId"), let productID = fields.string("productId"),
            let purchaseDate = fields.date("purchaseDate")
        else {
            throw LedgerError(.malformed, "the transaction lacks transactionId, productId or purchaseDate")
        }
        self.facts = TransactionFacts(
            environment: environment, transactionID: transactionID,
            originalTransactionID: fields.string("originalTransactionId") ?? transactionID, productID: productID,
            purchaseDate: purchaseDate, originalPurchaseDate: fields.date("originalPurchaseDate"),
            expiresDate: fields.date("expiresDate"), quantity: fields.int("quantity") ?? 1,
            ownership: fields.string("inAppOwnershipType").flatMap(OwnershipType.init(rawValue:)) ?? .purchased,
            isUpgraded: fields.bool("isUpgraded") ?? false, price: fields.int64("price"), currency: fields.string("currency"),
            storefront: fields.string("storefront"), webOrderLineItemID: fields.string("webOrderLineItemId"),
            appAccountToken: fields.string("appAccountToken").flatMap(UUID.init(uuidString:)),
            offerType: fields.int("offerType"), offerIdentifier: fields.string("offerIdentifier"),
            offerDiscountType: fields.string("offerDiscountType"), offerPeriod: fields.string("offerPeriod"),
            appTransactionID: fields.string("appTransactionId"), billingPlanType: fields.string("billingPlanType"),
            commitment: fields.members["commitmentInfo"].flatMap(SignedFields.init).map { commitment in
                Commitment(
                    billingPeriodNumber: commitment.int("billingPeriodNumber"), totalBillingPeriods: commitment.int("totalBillingPeriods"),
                    expiresDate: commitment.date("commitmentExpiresDate"), price: commitment.int64("commitmentPrice"))
            },
            revocationDate: fields.date("revocationDate"), revocationReason: fields.int("revocationReason"),
            signedDate: signedDate)
        self.type = fields.string("type")
        self.transactionReason = fields.string("transactionReason")
        self.revocationType = fields.string("revocationType")
        self.revocationPercentage = fields.int("revocationPercentage")
    }

    /// The revocation this transaction carries, if Apple already revoked it.
    package var revocation: RevocationFacts? {
        guard let date = facts.revocationDate else { return nil }
        let kind: RevocationFacts.Kind =
            switch revocationType {
            case "FAMILY_REVOKE": .familyRevoke
            case "REFUND_PRORATED": .refundProrated
            default: facts.ownership == .familyShared && revocationType == nil ? .familyRevoke : .refundFull
            }
        return RevocationFacts(
            environment: facts.environment, transactionID: facts.transactionID,
            originalTransactionID: facts.originalTransactionID, revocationDate: date,
            reason: facts.revocationReason, kind: kind, percentage: revocationPercentage,
            signedDate: facts.signedDate)
    }
}

/// Renewal info (`JWSRenewalInfoDecodedPayload`) as the domain's facts.
package struct DecodedRenewal: Sendable, Equatable {
    package var facts: RenewalFacts

    init(_ payload: JSONTree, environment: AppleEnvironment, signedDate: Date) throws {
        guard let fields = SignedFields(payload) else {
            throw LedgerError(.malformed, "the renewal info payload is not a JSON object")
        }
        guard let original = fields.string("originalTransactionId") else {
            throw LedgerError(.malformed, "the renewal info lacks originalTransactionId")
        }
        let autoRenewProduct = fields.string("autoRenewProductId")
        self.facts = RenewalFacts(
            environment: environment, originalTransactionID: original,
            productID: fields.string("productId") ?? autoRenewProduct ?? "", autoRenewProductID: autoRenewProduct,
            willAutoRenew: fields.int("autoRenewStatus") == 1, expirationIntent: fields.int("expirationIntent"),
            isInBillingRetry: fields.bool("isInBillingRetryPeriod") ?? false,
            gracePeriodExpiresDate: fields.date("gracePeriodExpiresDate"), renewalBillingPlanType: fields.string("renewalBillingPlanType"),
            offerType: fields.int("offerType"), offerIdentifier: fields.string("offerIdentifier"), signedDate: signedDate)
    }
}

/// JSON from signed payloads: numbers are numbers, dates are milliseconds since the epoch. Read
/// leniently, as Apple's fields have been read since JSONSerialization did it: a string field
/// may come as a number and an integer field as a numeric string.
struct SignedFields {
    let members: [String: JSONTree]

    /// Nil unless the payload is an object. A repeated key keeps its last value.
    init?(_ payload: JSONTree) {
        guard case .object(let members) = payload else { return nil }
        self.members = Dictionary(members, uniquingKeysWith: { _, last in last })
    }

    func string(_ key: String) -> String? {
        switch members[key] {
        case .string(let text)?: text
        case .number(let text)?: Self.canonical(number: text)
        default: nil
        }
    }

    /// A field that must be a string (a notification's type, subtype, id and signed parts).
    func text(_ key: String) -> String? {
        if case .string(let text)? = members[key] { text } else { nil }
    }

    func int(_ key: String) -> Int? { int64(key).flatMap { Int(exactly: $0) } }

    func int64(_ key: String) -> Int64? {
        switch members[key] {
        case .number(let text)?: Int64(text) ?? Double(text).flatMap { Int64(exactly: $0.rounded(.towardZero)) }
        case .string(let text)?: Int64(text)
        default: nil
        }
    }

    func bool(_ key: String) -> Bool? {
        switch members[key] {
        case .bool(let value)?: value
        case .number(let text)?: Double(text).map { $0 != 0 }
        default: nil
        }
    }

    /// Xcode data may carry fractional milliseconds; they are kept.
    func date(_ key: String) -> Date? {
        guard case .number(let text)? = members[key], let milliseconds = Double(text) else { return nil }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }

    /// A number where a string was expected, written as Foundation's `NSNumber` wrote it: an
    /// integer in digits, anything else as the shortest decimal.
    private static func canonical(number text: String) -> String? {
        if let integer = Int64(text) { return String(integer) }
        guard let value = Double(text) else { return nil }
        if value == value.rounded(), let integer = Int64(exactly: value) { return String(integer) }
        return "\(value)"
    }
}

extension SignedDataVerifier {
    /// Verifies a StoreKit 2 signed transaction for one app and decodes it.
    package func verifyTransaction(_ jws: String, expecting expectation: Expectation) async throws -> DecodedTransaction {
        let verified = try await verify(jws, as: .transaction, expecting: expectation)
        return try DecodedTransaction(verified.tree, environment: verified.environment, signedDate: verified.signedDate)
    }

    /// Verifies a StoreKit 2 signed renewal info for one app and decodes it.
    package func verifyRenewal(_ jws: String, expecting expectation: Expectation) async throws -> DecodedRenewal {
        let verified = try await verify(jws, as: .renewalInfo, expecting: expectation)
        return try DecodedRenewal(verified.tree, environment: verified.environment, signedDate: verified.signedDate)
    }
}
