import Crypto
import Foundation
import LedgerFormats
import _CryptoExtras

/// Compact JWS with RS256 (RSASSA-PKCS1-v1_5 with SHA-256), the only algorithm Google's OAuth
/// assertions and Pub/Sub's OIDC tokens use. swift-crypto signs with PSS unless told otherwise,
/// which Google would refuse, so the padding is named at every call.
package enum RS256 {
    /// `header.claims.signature`, each part base64url; keys sorted so a token is reproducible.
    package static func sign(header: [String: Any], claims: [String: Any], with key: _RSA.Signing.PrivateKey) throws -> String {
        let input =
            Base64URL.encode(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + Base64URL.encode(try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    package static func isValid(signature: Data, of signingInput: Substring, by key: _RSA.Signing.PublicKey) -> Bool {
        key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: Data(signingInput.utf8)),
            padding: .insecurePKCS1v1_5)
    }
}

/// A compact JWT split and its first two parts decoded, before anything is trusted.
package struct CompactJWT {
    package var header: [String: Any]
    package var claims: [String: Any]
    package var signingInput: Substring
    package var signature: Data

    package init?(_ token: some StringProtocol) {
        let text = String(token)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return nil }
        self.header = header
        self.claims = claims
        self.signature = signature
        self.signingInput = text[text.startIndex..<parts[1].endIndex]
    }

    /// A numeric claim (`iat`, `exp`), whether JSON gave an integer or a double.
    package func seconds(_ claim: String) -> Double? { (claims[claim] as? NSNumber)?.doubleValue }
}
