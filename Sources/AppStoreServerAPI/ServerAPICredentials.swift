import Crypto
import Foundation

/// One app's In-App Purchase key for the App Store Server API: the issuer id of the team, the
/// key's id, and the private key of the `.p8` file Apple lets a developer download once.
///
/// The private key is a credential: it never appears in a description, a log line or an answer,
/// and it is kept out of the event log (which is forever) — `ledger.app_server_api_keys` holds it.
package struct ServerAPICredentials: Sendable, CustomStringConvertible {
    package let issuerID: String
    package let keyID: String
    package let bundleID: String
    let privateKey: P256.Signing.PrivateKey
    /// The PEM as configured, to be stored again as it came.
    package let privateKeyPEM: String

    package enum Invalid: Error, Equatable, CustomStringConvertible {
        case issuerID, keyID, privateKey
        package var description: String {
            switch self {
            case .issuerID: "issuer_id is the team's issuer id from App Store Connect (a UUID)"
            case .keyID: "key_id is the In-App Purchase key's id from App Store Connect (letters and digits)"
            case .privateKey: "private_key must be the PEM text of the key's .p8 file (an EC P-256 PKCS#8 key)"
            }
        }
    }

    /// Checks each part the way Apple will need it, so a wrong key is refused when configured,
    /// not at the first reconciliation an hour later.
    package init(issuerID: String, keyID: String, privateKeyPEM: String, bundleID: String) throws {
        guard UUID(uuidString: issuerID) != nil else { throw Invalid.issuerID }
        guard (1...64).contains(keyID.count), keyID.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII })
        else {
            throw Invalid.keyID
        }
        guard privateKeyPEM.utf8.count <= 4096, let key = try? P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) else {
            throw Invalid.privateKey
        }
        self.issuerID = issuerID.lowercased()
        self.keyID = keyID
        self.bundleID = bundleID
        self.privateKey = key
        self.privateKeyPEM = privateKeyPEM
    }

    /// Names the key, never its secret.
    package var description: String { "App Store Server API key \(keyID) of \(bundleID)" }
}
