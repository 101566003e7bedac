import Crypto
import Foundation
import LedgerPostgres

/// `Ledger-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the receiver
/// recomputes it with the webhook's secret, compares in constant time and refuses an old `t`
/// (a replayed capture) — docs/webhooks.md shows how, and `Tools/WebhookReceiver` does it in the
/// tests. The scheme Stripe made familiar, so receivers already know it.
package enum WebhookSignature {
    package static let header = "Ledger-Signature"
    package static let idHeader = "Ledger-Webhook-Id"

    package static func sign(_ body: [UInt8], secret: String, at time: Int64) -> String {
        "t=\(time),v1=" + Hex.encode(mac(body, secret: secret, at: time))
    }

    private static func mac(_ body: [UInt8], secret: String, at time: Int64) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Array("\(time).".utf8))
        hmac.update(data: body)
        return Array(hmac.finalize())
    }
}
