import Crypto
import Foundation
import LedgerPostgres

/// `Ledger-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the receiver
/// recomputes it with the webhook's secret, compares in constant time and refuses an old `t`
/// (a replayed capture). The scheme Stripe made familiar, so receivers already know it.
package enum WebhookSignature {
    package static let header = "Ledger-Signature"
    package static let idHeader = "Ledger-Webhook-Id"

    package static func sign(_ body: [UInt8], secret: String, at time: Int64) -> String {
        "t=\(time),v1=" + Hex.encode(mac(body, secret: secret, at: time))
    }

    /// What a receiver does (docs/webhooks.md shows it in a few lines of Swift, Python and Node).
    package static func isValid(_ header: String, body: [UInt8], secret: String, now: Int64, tolerance: Int64 = 300) -> Bool {
        var time: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { time = Int64(pair[1]) } else if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let time, abs(now - time) <= tolerance else { return false }
        let signed = Array("\(time).".utf8) + body
        let key = SymmetricKey(data: Data(secret.utf8))
        return signatures.contains { signature in
            guard let code = Hex.decode(signature) else { return false }
            return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: signed, using: key)  // constant time
        }
    }

    private static func mac(_ body: [UInt8], secret: String, at time: Int64) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Array("\(time).".utf8))
        hmac.update(data: body)
        return Array(hmac.finalize())
    }
}
