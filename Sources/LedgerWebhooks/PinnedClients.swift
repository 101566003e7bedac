import AsyncHTTPClient
import NIOCore
import Synchronization

/// HTTP clients that connect each webhook host to the address `WebhookTargets` checked, not to
/// whatever a second DNS lookup returns (a name could resolve to a public address for the check
/// and to an internal one for the connection). One client per host, pinned by
/// AsyncHTTPClient's DNS override (TLS still names the host); a new one when the host's address
/// changes. Redirects are never followed: a receiver cannot send a delivery elsewhere.
final class PinnedClients: Sendable {
    private let concurrency: Int
    /// How long a replaced client stays open: deliveries that took it still finish on it.
    private let grace: Duration
    private let clients = Mutex<[String: (address: IPAddress, client: HTTPClient)]>([:])

    init(concurrency: Int, grace: Duration) {
        self.concurrency = concurrency
        self.grace = grace
    }

    func client(for host: String, at address: IPAddress) -> HTTPClient {
        let (client, replaced) = clients.withLock { clients -> (HTTPClient, HTTPClient?) in
            if let pinned = clients[host], pinned.address == address { return (pinned.client, nil) }
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
            configuration.dnsOverride = [host: address.description]
            // The client's own spans would record the whole URL, a receiver's key in its query
            // included; the dispatcher's delivery span names the webhook instead.
            configuration.tracing.tracer = nil
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            defer { clients[host] = (address, client) }
            return (client, clients[host]?.client)
        }
        if let replaced {
            Task { [grace] in
                try? await Task.sleep(for: grace)
                try? await replaced.shutdown()
            }
        }
        return client
    }

    func shutdown() async {
        let all = clients.withLock { clients in
            defer { clients.removeAll() }
            return clients.values.map(\.client)
        }
        for client in all { try? await client.shutdown() }
    }
}
