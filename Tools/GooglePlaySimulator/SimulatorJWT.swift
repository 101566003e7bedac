import Crypto
import Foundation
import _CryptoExtras

/// The simulator's own JWT reading and RS256 signing, written apart from the module under test so
/// a mistake there is not mirrored here.
enum SimulatorJWT {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    static func sign(header: [String: Any], claims: [String: Any], key: _RSA.Signing.PrivateKey) throws -> String {
        let input =
            encode(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + encode(try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + encode(signature.rawRepresentation)
    }

    /// Header, claims, whether the signature verifies with `key(header, claims)`.
    static func read(
        _ token: String, key: ([String: Any], [String: Any]) -> _RSA.Signing.PublicKey?
    ) -> (
        header: [String: Any], claims: [String: Any], signed: Bool
    )? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let h = decode(parts[0]), let c = decode(parts[1]), let s = decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: h) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: c) as? [String: Any]
        else { return nil }
        let input = Data((parts[0] + "." + parts[1]).utf8)
        let signed =
            key(header, claims).map {
                $0.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: s), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5)
            } ?? false
        return (header, claims, signed)
    }
}
