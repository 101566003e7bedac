import LedgerCore

/// What a verifyReceipt `status` means for the caller.
package enum ReceiptStatus: Sendable, Equatable {
    /// 0, or 21006 (valid, but the subscription expired: iOS 6-style receipts still carry it).
    case valid
    /// 21007: a sandbox receipt sent to production (App Review does this): ask sandbox.
    case retryInSandbox
    /// 21008: a production receipt sent to sandbox: ask production.
    case retryInProduction
    /// 21005, 21009, 21100–21199, or `is-retryable`: Apple's side failed; try again later.
    case temporarilyUnavailable
    /// Anything else: the receipt (or our configuration) is wrong, and asking again will not help.
    case rejected(LedgerError)

    package init(code: Int, isRetryable: Bool = false) {
        switch code {
        case 0, 21006: self = .valid
        case 21007: self = .retryInSandbox
        case 21008: self = .retryInProduction
        case 21005, 21009, 21100...21199: self = .temporarilyUnavailable
        case _ where isRetryable: self = .temporarilyUnavailable
        case 21004: self = .rejected(LedgerError(.sharedSecretMismatch, "Apple refused the app's shared secret (21004)"))
        case 21010: self = .rejected(LedgerError(.receiptInvalid, "the receipt's account is not found or was deleted (21010)"))
        case 21003: self = .rejected(LedgerError(.receiptInvalid, "Apple could not authenticate the receipt (21003)"))
        case 21000: self = .rejected(LedgerError(.receiptInvalid, "Apple could not read the request (21000)"))
        case 21002: self = .rejected(LedgerError(.receiptInvalid, "the receipt data is malformed (21002)"))
        default: self = .rejected(LedgerError(.receiptInvalid, "Apple answered status \(code)"))
        }
    }
}
