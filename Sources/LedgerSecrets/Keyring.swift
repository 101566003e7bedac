import Crypto
import Foundation
import LedgerCore

/// Which stored secret a sealed value belongs to: its table, its app and its kind. It is the
/// authenticated data of the seal, so a value copied into another row (another app's secret, a
/// webhook's secret moved to another webhook) does not open there.
package struct SecretBinding: Sendable, Hashable, CustomStringConvertible {
    package var table: String
    package var bundleID: String
    package var kind: String

    package init(table: String, bundleID: String, kind: String) {
        self.table = table
        self.bundleID = bundleID
        self.kind = kind
    }

    /// Each part is length-prefixed, so no choice of bundle id or name can make two bindings equal.
    var authenticatedData: Data {
        Data([table, bundleID, kind].map { "\($0.utf8.count):\($0)" }.joined(separator: "|").utf8)
    }

    package var description: String { "\(table) (\(bundleID), \(kind))" }
}

/// The keys this process holds: it seals with every one of them and opens with any.
///
/// A stored value is one envelope per sealing key, `sealed:v1:<key id>:<base64 of nonce,
/// ciphertext and tag>`, separated by commas. Two envelopes exist only during a key rotation: a
/// server holding either key then opens the value, so servers can move to the new key one by one.
package struct Keyring: Sendable {
    package let keys: [SecretsKey]

    package static let prefix = "sealed:v1:"

    /// `keys`: the current key first, then (during a rotation) the new one.
    package init(_ keys: [SecretsKey]) {
        precondition(!keys.isEmpty, "a keyring holds at least one key")
        var seen = Set<String>()
        self.keys = keys.filter { seen.insert($0.id).inserted }
    }

    package var ids: [String] { keys.map(\.id) }

    /// `clear` sealed under every key, bound to `binding`.
    package func seal(_ clear: String, for binding: SecretBinding) -> String {
        keys.map { Self.envelope(clear, key: $0, binding: binding) }.joined(separator: ",")
    }

    static func envelope(_ clear: String, key: SecretsKey, binding: SecretBinding) -> String {
        // AES-GCM with a random 96-bit nonce: a secret is sealed a handful of times per key, far
        // below the bound where random nonces could repeat.
        let box = try! AES.GCM.seal(Data(clear.utf8), using: key.key, authenticating: binding.authenticatedData)
        return prefix + key.id + ":" + box.combined!.base64EncodedString()
    }

    /// Whether `stored` is sealed at all (values written before sealing existed are not).
    package static func isSealed(_ stored: String) -> Bool { stored.hasPrefix(prefix) }

    /// The key ids `stored` has an envelope for.
    package static func keyIDs(of stored: String) -> [String] {
        guard isSealed(stored) else { return [] }
        return stored.split(separator: ",").compactMap { envelope in
            let parts = envelope.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            return parts.count == 4 ? String(parts[2]) : nil
        }
    }

    /// The clear value. A value not yet sealed is returned as it is (the start-up pass seals it).
    package func open(_ stored: String, for binding: SecretBinding) throws(LedgerError) -> String {
        guard Self.isSealed(stored) else { return stored }
        let held = Dictionary(keys.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var sealedUnder: [String] = []
        for envelope in stored.split(separator: ",") {
            let parts = envelope.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0] == "sealed", parts[1] == "v1" else { continue }
            sealedUnder.append(String(parts[2]))
            guard let key = held[String(parts[2])] else { continue }
            guard let combined = Data(base64Encoded: String(parts[3])), let box = try? AES.GCM.SealedBox(combined: combined),
                let clear = try? AES.GCM.open(box, using: key.key, authenticating: binding.authenticatedData),
                let text = String(data: clear, encoding: .utf8)
            else {
                throw LedgerError(
                    .secretUnavailable,
                    "the stored \(binding) does not open under its key: it was sealed for another row or altered; store it again")
            }
            return text
        }
        throw LedgerError(
            .secretUnavailable,
            "the stored \(binding) is sealed under key \(sealedUnder.joined(separator: " and ")), and this server holds \(ids.joined(separator: " and ")); "
                + "finish the key rotation (`ledger secrets rotate --finish`) or give this server that key")
    }
}
