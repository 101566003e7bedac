import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerCore
import Testing
import _CryptoExtras

/// The service account's key file and the OAuth JWT bearer grant, against the simulated token endpoint.
@Suite struct AccessTokenTests {
    @Test func aKeyFileIsReadAndItsTokenIsReusedUntilShortlyBeforeItExpires() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let first = try await google.tokens.token()
        let second = try await google.tokens.token()
        #expect(first == second && first.hasPrefix("ya29."))
        let fetched = await google.tokens.fetched
        #expect(google.tokenCalls() == 1 && fetched == 1)
    }

    @Test func aTokenAboutToExpireIsRenewed() async throws {
        // Google hands out a token for 200 s; the renewal margin is 300 s: every call needs a new one.
        let google = try await GoogleTestbed(accessTokenLifetime: 200)
        defer { Task { await google.simulator.stop() } }
        _ = try await google.tokens.token()
        _ = try await google.tokens.token()
        #expect(google.tokenCalls() == 2)
    }

    @Test func theAssertionCarriesGooglesClaimsAndIsSignedRS256() throws {
        let account = try GoogleServiceAccount(keyFile: try GoogleTestbed.account.keyFile(tokenURI: "https://oauth2.googleapis.com/token"))
        let issued = Date(timeIntervalSince1970: 1_772_359_200)
        let assertion = try GoogleAccessTokens.assertion(for: account, issued: issued)
        let jwt = try #require(CompactJWT(assertion))
        #expect(jwt.header["alg"] as? String == "RS256" && jwt.header["kid"] as? String == GoogleTestbed.account.keyID)
        #expect(
            jwt.claims["iss"] as? String == GoogleTestbed.account.email
                && jwt.claims["aud"] as? String == "https://oauth2.googleapis.com/token")
        #expect(jwt.claims["scope"] as? String == "https://www.googleapis.com/auth/androidpublisher")
        #expect(jwt.seconds("iat") == 1_772_359_200 && jwt.seconds("exp") == 1_772_362_800)
        #expect(RS256.isValid(signature: jwt.signature, of: jwt.signingInput, by: GoogleTestbed.account.privateKey.publicKey))
    }

    @Test func aKeyGoogleDoesNotKnowIsRefusedAsInvalidGrantWithoutQuotingTheKey() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let stranger = try SimulatedServiceAccount(email: GoogleTestbed.account.email)
        let account = try GoogleServiceAccount(keyFile: try stranger.keyFile(tokenURI: google.simulator.tokenURL))
        let error = await #expect(throws: LedgerError.self) { try await GoogleAccessTokens(account: account).token() }
        #expect(error?.code == .googleAPIUnauthorized)
        #expect(error?.message.contains("invalid_grant: Invalid JWT Signature.") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("PRIVATE KEY") == false)
    }

    @Test func anAccountGoogleDoesNotKnowIsRefused() async throws {
        let google = try await GoogleTestbed()
        defer { Task { await google.simulator.stop() } }
        let other = try SimulatedServiceAccount(email: "someone-else@example.iam.gserviceaccount.com")
        let account = try GoogleServiceAccount(keyFile: try other.keyFile(tokenURI: google.simulator.tokenURL))
        let error = await #expect(throws: LedgerError.self) { try await GoogleAccessTokens(account: account).token() }
        #expect(error?.code == .googleAPIUnauthorized && error?.message.contains("account not found") == true)
    }

    @Test func keyFilesThatAreNotServiceAccountsAreRefusedByField() throws {
        let pem = GoogleTestbed.account.privateKey.pkcs8PEMRepresentation
        func refusal(_ fields: [String: Any]) -> LedgerError? {
            do {
                _ = try GoogleServiceAccount(keyFile: try JSONSerialization.data(withJSONObject: fields))
                return nil
            } catch { return error as? LedgerError }
        }
        let good: [String: Any] = ["type": "service_account", "client_email": "a@b.iam.gserviceaccount.com", "private_key": pem]
        #expect(refusal(good) == nil)
        #expect(refusal(good.merging(["type": "authorized_user"]) { $1 })?.message.contains("expected 'service_account'") == true)
        #expect(refusal(good.filter { $0.key != "client_email" })?.message.contains("no client_email") == true)
        #expect(refusal(good.filter { $0.key != "private_key" })?.message.contains("no private_key") == true)
        let broken = String(pem.dropLast(80)) + "\n-----END PRIVATE KEY-----\n"
        let bad = refusal(good.merging(["private_key": broken]) { $1 })
        #expect(bad?.code == .invalidGoogleServiceAccount && bad?.message.contains("not a PEM RSA private key") == true)
        #expect(bad?.message.contains(String(pem.dropFirst(40).prefix(30))) == false, "the key is never quoted")
        #expect(refusal(good.merging(["token_uri": "ftp://x"]) { $1 })?.message.contains("token_uri") == true)
        #expect(throws: LedgerError.self) { try GoogleServiceAccount(keyFile: Data("not json".utf8)) }
    }

    @Test func theFixtureKeyFileShapeIsRefusedForItsPlaceholderKeyOnly() throws {
        guard GoogleFixtures.available else { return }
        let data = try GoogleFixtures.data("auth", "service_account_key.shape.json")
        let error = #expect(throws: LedgerError.self) { try GoogleServiceAccount(keyFile: data) }
        #expect(error?.message.contains("play-api@example-ledger-prod.iam.gserviceaccount.com") == true)
        #expect(error?.message.contains("REPLACE_WITH") == false)
    }
}
