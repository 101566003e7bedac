import Crypto
import Foundation
import LedgerCore
import LedgerFormats
import LedgerPostgres

/// A signed commitment to the whole log: the tree's size and root at an instant, and a compact
/// JWS (ES256) of the same three fields that any JOSE library checks with the key set the server
/// publishes. Saved by an auditor, it lets them check later that the log still extends it.
package struct Digest: Sendable, Equatable, Codable {
    package var treeSize: Int64
    package var rootHash: String
    package var signedAt: String
    package var jws: String

    enum CodingKeys: String, CodingKey {
        case treeSize = "tree_size", rootHash = "root_hash", signedAt = "signed_at", jws
    }

    package init(treeSize: Int64, rootHash: String, signedAt: String, jws: String) {
        self.treeSize = treeSize
        self.rootHash = rootHash
        self.signedAt = signedAt
        self.jws = jws
    }

    /// The JSON answer and file: `{"jws", "root_hash", "signed_at", "tree_size"}`.
    package var json: String {
        var writer = JSONWriter()
        writer.object { json in
            json.field("jws", jws)
            json.field("root_hash", rootHash)
            json.field("signed_at", signedAt)
            json.field("tree_size", treeSize)
        }
        return writer.text
    }
}

/// The private key digests are signed with, kept outside the database (`LEDGER_DIGEST_KEY_FILE`,
/// a PEM P-256 key): whoever can write the database cannot sign a digest of a log they rewrote.
package struct DigestKey: Sendable {
    let key: P256.Signing.PrivateKey

    package init(pem: String) throws {
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw LedgerError(
                .digestKeyNotConfigured, "the digest key is not a PEM P-256 private key; make one with `ledger digest-key generate`")
        }
    }

    package init(contentsOf path: String) throws {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw LedgerError(
                .digestKeyNotConfigured, "cannot read the digest key file \(path); make one with `ledger digest-key generate`")
        }
        try self.init(pem: pem)
    }

    package static func generate() -> String { P256.Signing.PrivateKey().pemRepresentation }

    package var publicKey: DigestPublicKey { DigestPublicKey(key.publicKey) }

    /// Signs the tree's size and root as of `at`.
    package func sign(treeSize: Int64, root: [UInt8], at: Date = Date()) throws -> Digest {
        let rootHash = Hex.encode(root)
        let signedAt = RFC3339.string(at)
        var payload = JSONWriter()
        payload.object { json in
            json.field("root_hash", rootHash)
            json.field("signed_at", signedAt)
            json.field("tree_size", treeSize)
        }
        var header = JSONWriter()
        header.object { json in
            json.field("alg", "ES256")
            json.field("kid", publicKey.keyID)
            json.field("typ", "ledger-digest+jwt")
        }
        let input = Base64URL.encode(header.text) + "." + Base64URL.encode(payload.text)
        let signature = try key.signature(for: Data(input.utf8)).rawRepresentation
        return Digest(treeSize: treeSize, rootHash: rootHash, signedAt: signedAt, jws: input + "." + Base64URL.encode(signature))
    }
}

/// A digest key's public half as a JWK, named by its RFC 7638 thumbprint.
package struct DigestPublicKey: Sendable {
    let key: P256.Signing.PublicKey

    init(_ key: P256.Signing.PublicKey) { self.key = key }

    private var coordinates: (x: String, y: String) {
        let point = Array(key.x963Representation.dropFirst())
        return (Base64URL.encode(Data(point[0..<32])), Base64URL.encode(Data(point[32..<64])))
    }

    /// base64url(SHA-256 of `{"crv":"P-256","kty":"EC","x":…,"y":…}`), the members in that order.
    package var keyID: String {
        let (x, y) = coordinates
        return Base64URL.encode(Data(SHA256.hash(data: Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8))))
    }

    /// `{"keys": [ … ]}`, what `GET /v1/ledger/digest-keys` answers.
    package static func keySet(_ keys: [DigestPublicKey]) -> String {
        var writer = JSONWriter()
        writer.object { json in
            json.array("keys", keys) { json, key in
                let (x, y) = key.coordinates
                json.object { jwk in
                    jwk.field("alg", "ES256")
                    jwk.field("crv", "P-256")
                    jwk.field("kid", key.keyID)
                    jwk.field("kty", "EC")
                    jwk.field("use", "sig")
                    jwk.field("x", x)
                    jwk.field("y", y)
                }
            }
        }
        return writer.text
    }

    /// The keys of a JWK Set (EC P-256 ones; others are left out).
    package static func keys(fromKeySet json: Data) throws -> [DigestPublicKey] {
        struct KeySet: Decodable {
            struct Key: Decodable { var kty: String?, crv: String?, x: String?, y: String? }
            var keys: [Key]
        }
        guard let set = try? JSONDecoder().decode(KeySet.self, from: json) else {
            throw LedgerError(.malformed, "the key set is not a JWK Set ({\"keys\": […]})")
        }
        return set.keys.compactMap { jwk in
            guard jwk.kty == "EC", jwk.crv == "P-256", let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode),
                let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + Array(x) + Array(y))
            else { return nil }
            return DigestPublicKey(key)
        }
    }

    /// Checks `digest`'s JWS against `keys` and that its payload says what its fields say.
    package static func verify(_ digest: Digest, with keys: [DigestPublicKey]) throws {
        let parts = digest.jws.split(separator: ".", omittingEmptySubsequences: false)
        struct Header: Decodable { var alg: String, kid: String? }
        struct Payload: Decodable { var tree_size: Int64, root_hash: String, signed_at: String }
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let payloadData = Base64URL.decode(parts[1]), let payload = try? JSONDecoder().decode(Payload.self, from: payloadData),
            let signatureData = Base64URL.decode(parts[2])
        else {
            throw LedgerError(.malformed, "the digest's jws is not a compact JWS of a digest")
        }
        guard header.alg == "ES256" else { throw LedgerError(.unsupportedAlgorithm, "the digest is signed with \(header.alg), not ES256") }
        guard let key = keys.first(where: { $0.keyID == header.kid }) else {
            throw LedgerError(
                .invalidSignature,
                "the digest is signed by key \(header.kid ?? "(none named)"), which is not among the keys given (\(keys.map(\.keyID).joined(separator: ", ")))"
            )
        }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else {
            throw LedgerError(.invalidSignature, "the digest's signature does not verify with key \(key.keyID)")
        }
        guard payload.tree_size == digest.treeSize, payload.root_hash == digest.rootHash, payload.signed_at == digest.signedAt else {
            throw LedgerError(.invalidSignature, "the digest's fields differ from what its jws signs")
        }
    }
}
