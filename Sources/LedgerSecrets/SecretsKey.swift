import Crypto
import Foundation

/// The key every stored secret is sealed with: 32 random bytes, AES-256-GCM. Its id is derived
/// from the key itself (a keyed hash, so the id gives nothing away), which lets a sealed value say
/// which key opens it without a registry that could disagree with the keys in use.
package struct SecretsKey: Sendable {
    package let key: SymmetricKey
    /// Sixteen hex digits naming this key in every value it seals.
    package let id: String

    package init(bytes: some ContiguousBytes) throws(SecretsKeyError) {
        let key = SymmetricKey(data: bytes)
        guard key.bitCount == 256 else { throw .wrongLength(key.bitCount / 8) }
        self.key = key
        let mac = HMAC<SHA256>.authenticationCode(for: Data("ledger secrets key id".utf8), using: key)
        self.id = Data(mac).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// Base64 of 32 bytes, as `openssl rand -base64 32` prints it (surrounding blanks ignored).
    package init(base64 text: String) throws(SecretsKeyError) {
        guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw .notBase64 }
        try self.init(bytes: bytes)
    }

    /// A key file as a secret manager mounts it: base64 text, or the 32 raw bytes.
    package init(file: URL) throws(SecretsKeyError) {
        let contents: Data
        do { contents = try Data(contentsOf: file) } catch { throw .unreadableFile(file.path, "\(error.localizedDescription)") }
        if let text = String(data: contents, encoding: .utf8), let key = try? SecretsKey(base64: text) {
            self = key
        } else if contents.count == 32 {
            try self.init(bytes: contents)
        } else {
            throw .notBase64
        }
    }

    /// A new random key, in the base64 form the settings take.
    package static func generate() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }
}

/// Why a configured key is not a key. The caller names the variable it came from.
package enum SecretsKeyError: Error, Equatable, CustomStringConvertible {
    case notBase64
    case wrongLength(Int)
    case unreadableFile(String, String)

    package var description: String {
        switch self {
        case .notBase64: "not base64 of 32 bytes (make a key with `ledger secrets generate` or `openssl rand -base64 32`)"
        case .wrongLength(let count):
            "\(count) bytes where 32 are needed (make a key with `ledger secrets generate` or `openssl rand -base64 32`)"
        case .unreadableFile(let path, let reason): "cannot read \(path): \(reason)"
        }
    }
}

extension Keyring {
    /// One new random key, for a process whose database lives no longer than it does (the tests,
    /// the benchmarks): nothing it seals needs opening by anyone else.
    package static func ephemeral() -> Keyring {
        Keyring([try! SecretsKey(base64: SecretsKey.generate())])
    }
}
