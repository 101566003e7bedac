import Foundation
import LedgerCore
import _CryptoExtras

/// A Google Cloud service account's JSON key file, as the Cloud console downloads it: who the
/// account is (`client_email`), its RSA key and the key's id, and where to trade an assertion for
/// an access token (`token_uri`). Errors name the field at fault and never quote the key.
package struct GoogleServiceAccount: Sendable {
    package var clientEmail: String
    package var privateKeyID: String?
    package var tokenURI: String
    package var projectID: String?
    let privateKey: _RSA.Signing.PrivateKey

    /// Google's token endpoint, used when a key file has no `token_uri`.
    package static let googleTokenURI = "https://oauth2.googleapis.com/token"

    package init(clientEmail: String, privateKeyID: String?, privateKey: _RSA.Signing.PrivateKey, tokenURI: String = googleTokenURI) {
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.tokenURI = tokenURI
    }

    private struct KeyFile: Decodable {
        var type: String?
        var project_id: String?
        var private_key_id: String?
        var private_key: String?
        var client_email: String?
        var token_uri: String?
    }

    /// Reads a key file's bytes.
    package init(keyFile: Data) throws(LedgerError) {
        let file: KeyFile
        do {
            file = try JSONDecoder().decode(KeyFile.self, from: keyFile)
        } catch {
            throw Self.problem("is not a service account's JSON key file (\(GoogleDecoding.reason(error)))")
        }
        guard file.type == "service_account" else {
            throw Self.problem("has type \(file.type.map { "'\($0.prefix(40))'" } ?? "missing"), expected 'service_account'")
        }
        guard let email = file.client_email, !email.isEmpty else { throw Self.problem("has no client_email") }
        guard let pem = file.private_key, !pem.isEmpty else { throw Self.problem("of \(email) has no private_key") }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            // The library's error might describe the bytes; only that it failed is said.
            throw Self.problem("of \(email) has a private_key that is not a PEM RSA private key of 2048 bits or more")
        }
        let tokenURI = file.token_uri.flatMap { $0.isEmpty ? nil : $0 } ?? Self.googleTokenURI
        guard let url = URL(string: tokenURI), ["https", "http"].contains(url.scheme ?? ""), url.host != nil else {
            throw Self.problem("of \(email) has a token_uri that is not an http(s) URL")
        }
        self.init(clientEmail: email, privateKeyID: file.private_key_id, privateKey: key, tokenURI: tokenURI)
        projectID = file.project_id
    }

    static func problem(_ sentence: String) -> LedgerError {
        LedgerError(.invalidGoogleServiceAccount, "the Google service account key file " + sentence)
    }
}

extension GoogleServiceAccount: CustomStringConvertible {
    /// The account by its email and key id: a log line or an error may show it.
    package var description: String { "\(clientEmail) (key \(privateKeyID ?? "without id"))" }
}
