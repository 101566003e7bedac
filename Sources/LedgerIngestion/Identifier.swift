import LedgerCore

/// The one gate every identifier a client sends passes on its way into the log: user ids, grant
/// ids, idempotency keys, currencies and entitlements.
///
/// Control characters are refused, all of U+0000–U+001F and U+007F, not only newline and NUL:
/// the ledger joins identifiers with U+001D–U+001F where they must stay apart — a stable event
/// id's parts (`StableID`), the users a projection batch announces to other servers
/// (`TimelineCache`) — so one inside an identifier could split an announcement (another server
/// keeps a stale answer) or make two different ids collide. JSON text escapes them, and Apple's
/// ids are verified digits, so nothing else that is joined can carry one.
package struct Identifier: Sendable {
    package let field: String
    package let code: LedgerError.Code
    package let maximumLength: Int
    /// Values starting with it are the ledger's own (an erased user's pseudonym), never a client's.
    package let reservedPrefix: String?

    init(field: String, code: LedgerError.Code, maximumLength: Int, reservedPrefix: String? = nil) {
        self.field = field
        self.code = code
        self.maximumLength = maximumLength
        self.reservedPrefix = reservedPrefix
    }

    package static let userID = Identifier(field: "user_id", code: .invalidUserID, maximumLength: 255, reservedPrefix: ErasedUser.prefix)
    /// The user an erasure names: any id, an erased user's pseudonym included.
    package static let erasedUserID = Identifier(field: "user_id", code: .invalidUserID, maximumLength: 255)
    package static let grantID = Identifier(field: "grant_id", code: .invalidGrantID, maximumLength: 255)
    /// The account merged into another (`from` of a merge): a user id.
    package static let mergedUserID = Identifier(field: "from", code: .invalidMerge, maximumLength: 255, reservedPrefix: ErasedUser.prefix)
    package static let idempotencyKey = Identifier(field: "idempotency_key", code: .invalidIdempotencyKey, maximumLength: 255)
    package static let currency = Identifier(field: "currency", code: .invalidAmount, maximumLength: 100)
    /// A currency's code as set up (`PUT …/currencies/{code}`).
    package static let currencyCode = Identifier(field: "code", code: .invalidCurrency, maximumLength: 100)
    /// What a spend bought, in the game's words, and its id of it.
    package static let spendReason = Identifier(field: "reason", code: .invalidReference, maximumLength: 200)
    package static let spendReference = Identifier(field: "reference", code: .invalidReference, maximumLength: 255)
    package static let entitlement = Identifier(field: "entitlement", code: .invalidGrant, maximumLength: 200)
    package static let appPurchaseEntitlement = Identifier(
        field: "app_purchase.entitlements", code: .invalidAppPurchase, maximumLength: 200)
    package static let productEntitlement = Identifier(field: "entitlements", code: .invalidEntitlements, maximumLength: 200)
    package static let productCurrency = Identifier(field: "grants' currencies", code: .invalidGrants, maximumLength: 100)

    /// `value`, or a 400 naming the field. The length counts Unicode code points, as JSON
    /// Schema's `maxLength` does: the API description states the rule exactly (`Identifier` in
    /// openapi.json), so a value it calls valid is never refused here.
    @discardableResult
    package func check(_ value: String) throws -> String {
        guard !value.isEmpty, value.unicodeScalars.count <= maximumLength, !value.unicodeScalars.contains(where: Self.isControl) else {
            throw LedgerError(code, "\(field) must be 1–\(maximumLength) characters without control characters")
        }
        if let reservedPrefix, value.hasPrefix(reservedPrefix) {
            throw LedgerError(code, "\(field) must not start with \(reservedPrefix): the ledger names erased users so")
        }
        return value
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool { scalar.value < 0x20 || scalar.value == 0x7F }
}
