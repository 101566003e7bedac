import Foundation
import Hummingbird
import LoopbackServer
import Synchronization
import _CryptoExtras

/// Google Play as the tests meet it, served on loopback: the OAuth token endpoint
/// (`/token`), androidpublisher v3 under Google's paths with purchases in state, the JWK Set
/// Pub/Sub's tokens are checked with (`/oauth2/v3/certs`), and a sender of signed pushes.
/// Faults can be injected per path for N calls; every request is remembered.
///
/// Not simulated: Play's clock (changes happen when a test asks), orders.get, price changes,
/// installments, multi-item subscriptions, Google's quotas.
package final class SimulatedGooglePlay: Sendable {
    /// An answer to inject instead of the real one.
    package struct Fault: Sendable {
        package var status: Int
        package var reason: String?
        package var retryAfter: String?
        /// Only requests whose path contains this; nil: every API request.
        package var pathContains: String?
        package var times: Int

        package init(status: Int, reason: String? = nil, retryAfter: String? = nil, pathContains: String? = nil, times: Int = 1) {
            self.status = status
            self.reason = reason
            self.retryAfter = retryAfter
            self.pathContains = pathContains
            self.times = times
        }
    }

    /// One request as the simulator saw it (path with its query), and its answer's status.
    package struct Seen: Sendable {
        package var method: String
        package var path: String
        package var status: Int
    }

    package struct RefundRecord: Sendable, Equatable {
        package var orderID: String
        package var revoke: Bool
        package init(orderID: String, revoke: Bool) {
            self.orderID = orderID
            self.revoke = revoke
        }
    }

    package struct ReviewRecord: Sendable {
        package var orderID: String
        package var body: [String: String]
    }

    struct State {
        var accounts: [String: _RSA.Signing.PublicKey] = [:]
        var accessTokens: [String: Date] = [:]
        var subscriptions: [String: SimulatedSubscription] = [:]
        var products: [String: SimulatedProduct] = [:]
        var voided: [SimulatedVoided] = []
        var refunds: [RefundRecord] = []
        var reviews: [ReviewRecord] = []
        var faults: [Fault] = []
        var seen: [Seen] = []
        var counter = 0
    }

    let state = Mutex(State())
    package let pusher: PubSubPusher
    /// Seconds an access token lives.
    package let accessTokenLifetime: Int
    private let server: Mutex<LoopbackServer?> = Mutex(nil)
    private let port = Atomic<Int>(0)

    /// `pusher`: one shared between simulators spares making RSA keys for each.
    package init(accessTokenLifetime: Int = 3599, pusher: PubSubPusher? = nil) throws {
        self.accessTokenLifetime = accessTokenLifetime
        self.pusher = try pusher ?? PubSubPusher()
    }

    /// Listens on loopback; `baseURL` is where Google's hosts are then.
    package func start() async throws {
        let router = Router()
        registerOAuth(on: router)
        registerPublisher(on: router)
        router.get("oauth2/v3/certs") { _, _ in
            self.remember("GET", "/oauth2/v3/certs", 200)
            return Self.json(200, self.pusher.jwks())
        }
        let running = try await LoopbackServer.start(router, name: "google-play-simulator")
        port.store(running.port, ordering: .relaxed)
        server.withLock { $0 = running }
    }

    package func stop() async {
        if let running = server.withLock({ $0 }) { await running.stop() }
    }

    package var baseURL: String { "http://127.0.0.1:\(port.load(ordering: .relaxed))/" }
    package var tokenURL: String { baseURL + "token" }
    package var certsURL: String { baseURL + "oauth2/v3/certs" }

    /// A service account Google knows, and its key file pointing at this simulator.
    package func register(_ account: SimulatedServiceAccount) {
        state.withLock { $0.accounts[account.email] = account.privateKey.publicKey }
    }

    package func inject(_ fault: Fault) { state.withLock { $0.faults.append(fault) } }
    /// Google is well again: the faults still waiting are dropped.
    package func clearFaults() { state.withLock { $0.faults.removeAll() } }
    package func seen() -> [Seen] { state.withLock { $0.seen } }
    package func refunds() -> [RefundRecord] { state.withLock { $0.refunds } }
    package func reviews() -> [ReviewRecord] { state.withLock { $0.reviews } }
    /// Every access token handed out so far stops working (as when Google revokes them).
    package func revokeAccessTokens() { state.withLock { $0.accessTokens = [:] } }

    func remember(_ method: String, _ path: String, _ status: Int) {
        state.withLock { $0.seen.append(Seen(method: method, path: path, status: status)) }
    }

    func nextID() -> Int {
        state.withLock {
            $0.counter += 1
            return $0.counter
        }
    }

    /// A purchase token shaped like Google's (opaque, dot-separated).
    func newToken() -> String {
        let letters = (0..<24).map { _ in String("abcdefghijklmnopqrstuvwxyz".randomElement()!) }.joined()
        return letters + ".AO-J1O" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
    }

    func newOrderID() -> String {
        let n = nextID()
        return String(format: "GPA.33%02d-%04d-%04d-%05d", n % 100, n, Int.random(in: 0...9999), Int.random(in: 0...99999))
    }

    static func json(_ status: Int, _ object: Any, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8)
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
