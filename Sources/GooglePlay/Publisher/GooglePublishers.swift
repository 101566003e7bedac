import AsyncHTTPClient
import LedgerCore
import Logging
import Synchronization

/// One Developer API client per service account, kept: each holds its account's access token,
/// which is good for an hour, so asking Google about a purchase costs one request, not two.
package final class GooglePublishers: Sendable {
    package let configuration: GooglePlayConfiguration
    /// The keys Pub/Sub's push tokens are signed with, fetched once and kept.
    package let keySet: GoogleKeySet
    let http: HTTPClient
    let logger: Logger
    let clock: PatienceClock
    let observe: @Sendable (GoogleCall) -> Void
    private let clients = Mutex<[String: AndroidPublisherClient]>([:])

    package init(
        configuration: GooglePlayConfiguration, http: HTTPClient = .google, logger: Logger, clock: PatienceClock = .continuous,
        observe: @escaping @Sendable (GoogleCall) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.keySet = GoogleKeySet(url: configuration.certsURL, http: http, logger: logger)
        self.http = http
        self.logger = logger
        self.clock = clock
        self.observe = observe
    }

    /// The client that asks as `account`; a key changed under the same email is another client.
    package func client(for account: GoogleServiceAccount) -> AndroidPublisherClient {
        let key = [account.clientEmail, account.privateKeyID ?? "", account.tokenURI].joined(separator: "\u{1F}")
        return clients.withLock { clients in
            if let client = clients[key] { return client }
            if clients.count > 1_000 { clients.removeAll() }
            let client = AndroidPublisherClient(
                configuration: configuration, tokens: GoogleAccessTokens(account: account, http: http), http: http, logger: logger,
                clock: clock, observe: observe)
            clients[key] = client
            return client
        }
    }
}
