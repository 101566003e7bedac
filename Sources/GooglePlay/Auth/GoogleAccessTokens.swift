import AsyncHTTPClient
import Foundation
import LedgerCore
import NIOCore
import NIOHTTP1

/// Access tokens for the Developer API from a service account's JWT bearer grant (RFC 7523): an
/// RS256 assertion (`iss` the account, `scope` androidpublisher, `aud` the key file's
/// `token_uri`, an hour at most) posted as a form to `token_uri`. A token is reused until shortly
/// before its `expires_in`, and concurrent callers share one request for a new one.
package actor GoogleAccessTokens {
    package static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// Google refuses an assertion valid for more than an hour ("must be a short-lived token").
    static let assertionLifetime: TimeInterval = 3600

    package let account: GoogleServiceAccount
    let http: HTTPClient
    let now: @Sendable () -> Date
    /// A token is renewed this long before it expires, so a request never starts with one about to lapse.
    let renewalMargin: TimeInterval
    private var cached: (token: String, expires: Date)?
    private var pending: Task<(token: String, expires: Date), any Error>?
    /// How many tokens were fetched: tests see the cache at work.
    package private(set) var fetched = 0

    package init(
        account: GoogleServiceAccount, http: HTTPClient = .google, renewalMargin: TimeInterval = 300,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.account = account
        self.http = http
        self.renewalMargin = renewalMargin
        self.now = now
    }

    /// A token valid for at least the renewal margin (or half its life, for a short-lived one).
    package func token() async throws(LedgerError) -> String {
        if let cached, cached.expires.timeIntervalSince(now()) > renewalMargin { return cached.token }
        let task: Task<(token: String, expires: Date), any Error>
        if let pending {
            task = pending
        } else {
            task = Task { [account, http, now] in try await Self.fetch(account: account, http: http, now: now) }
            pending = task
            fetched += 1
        }
        defer { pending = nil }
        do {
            let fresh = try await task.value
            cached = fresh
            return fresh.token
        } catch let error as LedgerError {
            throw error
        } catch {
            throw LedgerError(.googleUnavailable, "Google's token endpoint could not be reached", underlying: error, retryAfter: 5)
        }
    }

    /// Forgets `token` after the API refused it, so the next call fetches another.
    package func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    /// The signed assertion for `account` issued at `issued`.
    package static func assertion(for account: GoogleServiceAccount, issued: Date) throws -> String {
        var header: [String: Any] = ["alg": "RS256", "typ": "JWT"]
        if let kid = account.privateKeyID { header["kid"] = kid }
        let iat = Int64(issued.timeIntervalSince1970)
        let claims: [String: Any] = [
            "iss": account.clientEmail, "scope": scope, "aud": account.tokenURI, "iat": iat, "exp": iat + Int64(assertionLifetime),
        ]
        return try RS256.sign(header: header, claims: claims, with: account.privateKey)
    }

    private struct TokenAnswer: Decodable {
        var access_token: String
        var expires_in: Int?
        var token_type: String?
    }

    private static func fetch(
        account: GoogleServiceAccount, http: HTTPClient, now: () -> Date
    ) async throws -> (
        token: String, expires: Date
    ) {
        let issued = now()
        let form =
            "grant_type=" + formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion="
            + formEncoded(try assertion(for: account, issued: issued))
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: form))
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = Data(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        let status = Int(response.status.code)
        switch status {
        case 200:
            guard let answer = try? JSONDecoder().decode(TokenAnswer.self, from: body), !answer.access_token.isEmpty else {
                throw LedgerError(.googleAPIRefused, "Google's token endpoint answered 200 without an access token")
            }
            let lifetime = TimeInterval(answer.expires_in ?? 3600)
            return (answer.access_token, issued.addingTimeInterval(lifetime))
        case 429, 500...:
            let wait = response.headers.first(name: "Retry-After").flatMap { GoogleRetryPlan.retryAfter($0, now: now()) } ?? .seconds(5)
            throw GoogleRefusals.unavailable("its token endpoint answered HTTP \(status)", retryAfter: GoogleRetryPlan.seconds(wait))
        default:
            let oauth = OAuthErrorBody.decode(body)
            let why = oauth.map { $0.error + ($0.errorDescription.map { ": " + String($0.prefix(200)) } ?? "") } ?? "HTTP \(status)"
            let hint =
                oauth?.error == "invalid_grant"
                ? "; check the key file is current (not deleted in Cloud IAM) and this machine's clock" : ""
            throw LedgerError(.googleAPIUnauthorized, "Google refused an access token to \(account) (\(why))\(hint)")
        }
    }

    /// `application/x-www-form-urlencoded`: only unreserved characters left as they are.
    static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .googleUnreserved) ?? ""
    }
}

extension CharacterSet {
    /// RFC 3986's unreserved characters: what a path segment, query value or form value keeps.
    static let googleUnreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
}

extension HTTPClient {
    /// The client for calls to Google: like AsyncHTTPClient's shared one (never shut down), but
    /// making no spans of its own, which would record whole URLs — purchase tokens in the paths,
    /// page tokens in the queries.
    package static let google: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
}
