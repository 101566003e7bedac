import Foundation
import _CryptoExtras

/// A service account of the simulated Google: an RSA key made at run time (no key is ever in
/// git), and the JSON key file the Cloud console would download for it, its `token_uri` pointing
/// at the simulator.
package struct SimulatedServiceAccount: Sendable {
    package let email: String
    package let keyID: String
    package let privateKey: _RSA.Signing.PrivateKey

    package init(email: String = "play-api@example-ledger-test.iam.gserviceaccount.com") throws {
        self.email = email
        self.keyID = (0..<40).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
        self.privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// The key file's bytes, in the Cloud console's field names and PKCS#8 PEM.
    package func keyFile(tokenURI: String, projectID: String = "example-ledger-test") throws -> Data {
        let fields: [String: Any] = [
            "type": "service_account", "project_id": projectID, "private_key_id": keyID,
            "private_key": privateKey.pkcs8PEMRepresentation, "client_email": email, "client_id": "114683608631111100000",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        ]
        return try JSONSerialization.data(withJSONObject: fields, options: [.prettyPrinted, .sortedKeys])
    }
}
