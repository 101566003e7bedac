import Crypto
import Foundation
import LedgerCore

/// How the ledger names a Google Play purchase where it names an Apple original transaction: in
/// its stream, its ownership and its finance rows.
///
/// `gp:` and the first 32 hex digits of the purchase token's SHA-256. Google keeps a
/// subscription's token across its renewals, so the key is stable for as long as the purchase is
/// one; an upgrade or a resubscription is a new token, so a new key. The token itself is personal
/// data and long (up to a few hundred bytes): it stays in the evidence, which erasure shreds, and
/// out of stream names, which are forever. Apple's ids are digits, so the two never meet.
package enum GooglePurchaseKey {
    package static let prefix = Store.googlePlayKeyPrefix

    package static func of(token: String) -> String {
        let digest = SHA256.hash(data: Data(token.utf8))
        return prefix + digest.prefix(16).map { byte in String(byte, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// Whether an original transaction id names a Google purchase.
    package static func isGoogle(_ originalTransactionID: String) -> Bool { originalTransactionID.hasPrefix(prefix) }

    /// What a purchase's `obfuscatedExternalAccountId` stands for in the ledger: the app's account
    /// id is linked to a user exactly as an Apple `appAccountToken` is. Apps often pass a UUID,
    /// which is taken as it is; any other text becomes the name-based UUID (RFC 9562, version 8)
    /// of its SHA-256, so the same account id is always the same link and none is stored in clear.
    package static func accountToken(_ obfuscatedAccountID: String?) -> UUID? {
        guard let text = obfuscatedAccountID, !text.isEmpty else { return nil }
        if let uuid = UUID(uuidString: text) { return uuid }
        var bytes = Array(SHA256.hash(data: Data(("google-account:" + text).utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11],
                bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
