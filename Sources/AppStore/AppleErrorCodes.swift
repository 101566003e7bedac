import LedgerCore

extension LedgerError.Code {
    /// Apple's errorCodes that have a code of their own here: the subscription's state does not
    /// allow an extension (4030004), it had its extensions already (4030005), a family-shared
    /// purchase cannot be acted on (4030007, 4000185), the token is no UUID (4000183), the id is
    /// not an original transaction id (4000187).
    package static let byAppleErrorCode: [Int: LedgerError.Code] = [
        4_030_004: .extensionIneligible, 4_030_005: .extensionLimitReached, 4_030_007: .familySharedNotSupported,
        4_000_185: .familySharedNotSupported, 4_000_183: .invalidAppAccountToken, 4_000_187: .notOriginalTransactionID,
    ]
}
