import Foundation
import Hummingbird
import Synchronization

extension SimulatedGooglePlay {
    static let scope = "https://www.googleapis.com/auth/androidpublisher"

    /// Google's token endpoint for the JWT bearer grant: the assertion must be RS256 by a known
    /// account's key, for the androidpublisher scope, addressed to this endpoint, for an hour at
    /// most and not expired. Refusals in OAuth's shape, 400, as Google answers them.
    func registerOAuth(on router: Router<BasicRequestContext>) {
        router.post("token") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 16)
            let form = Self.form(String(decoding: body.readableBytesView, as: UTF8.self))
            let (status, answer) = self.grant(form)
            self.remember("POST", "/token", status)
            return Self.json(status, answer)
        }
    }

    func grant(_ form: [String: String]) -> (Int, [String: Any]) {
        func refuse(_ error: String, _ description: String) -> (Int, [String: Any]) {
            (400, ["error": error, "error_description": description])
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        let accounts = state.withLock { $0.accounts }
        guard let assertion = form["assertion"],
            let jwt = SimulatorJWT.read(assertion, key: { _, claims in (claims["iss"] as? String).flatMap { accounts[$0] } })
        else { return refuse("invalid_request", "Invalid JWT.") }
        guard jwt.header["alg"] as? String == "RS256" else { return refuse("invalid_grant", "Invalid JWT: unsupported algorithm.") }
        guard let issuer = jwt.claims["iss"] as? String, accounts[issuer] != nil else {
            return refuse("invalid_grant", "Invalid grant: account not found")
        }
        guard jwt.signed else { return refuse("invalid_grant", "Invalid JWT Signature.") }
        guard jwt.claims["aud"] as? String == tokenURL else {
            return refuse("invalid_grant", "Invalid JWT: Failed audience check. The expected value is \(tokenURL)")
        }
        let now = Date().timeIntervalSince1970
        guard let iat = (jwt.claims["iat"] as? NSNumber)?.doubleValue, let exp = (jwt.claims["exp"] as? NSNumber)?.doubleValue,
            exp - iat <= 3600, exp > now, iat <= now + 60
        else {
            return refuse(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
            )
        }
        let scopes = (jwt.claims["scope"] as? String ?? "").split(separator: " ").map(String.init)
        guard scopes.contains(Self.scope) else { return refuse("invalid_scope", "Invalid OAuth scope or ID token audience provided.") }
        let token = "ya29.sim-" + UUID().uuidString
        state.withLock { $0.accessTokens[token] = Date().addingTimeInterval(TimeInterval(accessTokenLifetime)) }
        return (200, ["access_token": token, "expires_in": accessTokenLifetime, "token_type": "Bearer"])
    }

    /// Whether an `Authorization` header carries an access token this simulator issued and has not expired.
    func authorized(_ header: String?) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let token = String(header.dropFirst("Bearer ".count))
        return state.withLock { $0.accessTokens[token].map { $0 > Date() } ?? false }
    }

    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }
}
