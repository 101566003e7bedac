import Foundation
import LedgerCore

/// Google's final refusals as the ledger's errors. Each message names the purchase by the start of
/// its token (never the whole, which is a credential of sorts) and says what the caller can do.
enum GoogleRefusals {
    /// A purchase token as messages may show it: its first eight characters.
    static func shown(_ token: String?) -> String {
        guard let token, !token.isEmpty else { return "the purchase" }
        return "the purchase token " + token.prefix(8) + "…"
    }

    /// The error for an answer with `status` and `body` that will not be retried (401 and 403
    /// are handled by the client, which may refresh its token first).
    static func refusal(status: Int, envelope: GoogleErrorEnvelope?, token: String?) -> LedgerError {
        let google = envelope?.message.map { " (Google: \($0))" } ?? ""
        let reason = envelope?.reason
        let what = shown(token)
        switch (status, reason) {
        case (410, _):
            return LedgerError(
                .purchaseTokenExpired,
                "Google no longer keeps \(what): it ended more than 60 days ago or was replaced; this answer is final\(google)")
        case (400, "purchaseTokenDoesNotMatchPackageName"):
            return LedgerError(.packageMismatch, "\(what) belongs to another app than the package asked about\(google)")
        case (400, "invalidPurchaseState"):
            return LedgerError(
                .invalidPurchaseState,
                "\(what) cannot be acted on in its state (pending, already acknowledged or consumed, or canceled)\(google)")
        case (400, _)
        where (envelope?.error.status == "FAILED_PRECONDITION" || reason == "failedPrecondition")
            && envelope?.message?.localizedCaseInsensitiveContains("expired") == true:
            return LedgerError(.purchaseTokenExpired, "Google no longer keeps \(what): it expired too long ago\(google)")
        case (400, "invalid"):
            return LedgerError(
                .googleAPIRefused, "Google says \(what) or the product id is not valid for this package (Invalid Value)\(google)")
        case (404, _):
            return LedgerError(.googlePurchaseNotFound, "Google knows no such purchase: \(what) was not found\(google)")
        case (401, _), (403, _):
            return LedgerError(
                .googleAPIUnauthorized,
                "Google refused the service account (HTTP \(status)\(reason.map { ", \($0)" } ?? "")): give it access to the app in "
                    + "Play Console (with View financial data), which can take a day to apply\(google)")
        default:
            return LedgerError(
                .googleAPIRefused, "Google refused the request about \(what) (HTTP \(status)\(reason.map { ", \($0)" } ?? ""))\(google)")
        }
    }

    /// Google is away or rate-limiting for longer than the call may wait: the caller answers 503
    /// with `Retry-After`.
    static func unavailable(_ cause: String, retryAfter seconds: Int) -> LedgerError {
        LedgerError(.googleUnavailable, "Google is unavailable (\(cause)), retry after \(seconds) s", retryAfter: seconds)
    }
}
