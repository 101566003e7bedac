import Foundation
import GooglePlay
import GooglePlaySimulator
import Hummingbird
import LedgerCore
import Logging
import LoopbackServer
import Synchronization
import Testing

/// Pub/Sub's OIDC tokens as the simulator signs them, checked against its published keys, and
/// each forgery refused for its own reason.
@Suite struct PushVerifierTests {
    static let audience = "https://billing.example.com/google/rtdn"
    static let email = "rtdn-push@example-ledger-test.iam.gserviceaccount.com"

    /// A simulator with a signer of its own (some tests rotate its keys), and a verifier of it.
    struct Setup {
        let simulator: SimulatedGooglePlay
        let keys: GoogleKeySet
        let verifier: PubSubPushVerifier
        let clock: TestTime

        init(pusher: PubSubPusher = GoogleTestbed.pusher) async throws {
            simulator = try SimulatedGooglePlay(pusher: pusher)
            try await simulator.start()
            let clock = TestTime()
            self.clock = clock
            keys = GoogleKeySet(url: simulator.certsURL, logger: Logger(label: "keys"), refetchInterval: 60, now: { clock.now })
            verifier = PubSubPushVerifier(
                keys: keys, expecting: .init(audience: PushVerifierTests.audience, serviceAccountEmail: PushVerifierTests.email))
        }

        func header(_ forgery: PubSubPusher.Forgery = .none) throws -> String {
            "Bearer " + (try simulator.pusher.token(audience: PushVerifierTests.audience, email: PushVerifierTests.email, forgery: forgery))
        }

        func certFetches() -> Int { simulator.seen().filter { $0.path == "/oauth2/v3/certs" }.count }
    }

    final class TestTime: Sendable {
        private let offset = Mutex<TimeInterval>(0)
        var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
        func advance(_ seconds: TimeInterval) { offset.withLock { $0 += seconds } }
    }

    @Test func aGenuineTokenIsAcceptedAndTheKeysAreFetchedOnce() async throws {
        let setup = try await Setup()
        defer { Task { await setup.simulator.stop() } }
        let identity = try await setup.verifier.verify(authorization: try setup.header())
        #expect(identity.email == Self.email && identity.subject == "113774264463038321964")
        _ = try await setup.verifier.verify(authorization: try setup.header())
        let fetches = await setup.keys.fetches
        #expect(setup.certFetches() == 1 && fetches == 1)
        let plainIssuer = try await setup.verifier.verify(authorization: try setup.header(.issuer("accounts.google.com")))
        #expect(plainIssuer.email == Self.email, "Google's issuer without its scheme is Google's too")
    }

    @Test(arguments: [
        (PubSubPusher.Forgery.wrongKey, LedgerError.Code.invalidSignature, "does not verify"),
        (.audience("https://elsewhere.example.com/push"), .invalidPushToken, "another audience"),
        (.issuer("https://evil.example.com"), .invalidPushToken, "not issued by Google"),
        (.email("someone@example.iam.gserviceaccount.com"), .invalidPushToken, "another service account"),
        (.unverifiedEmail, .invalidPushToken, "unverified email"),
        (.expired, .invalidPushToken, "expired"),
        (.issuedInFuture, .invalidPushToken, "issued in the future"),
        (.algorithmNone, .unsupportedAlgorithm, "not RS256"),
        (.hs256, .unsupportedAlgorithm, "'HS256'"),
    ])
    func aForgedTokenIsRefusedForItsReason(_ forgery: PubSubPusher.Forgery, _ code: LedgerError.Code, _ reason: String) async throws {
        let setup = try await Setup()
        defer { Task { await setup.simulator.stop() } }
        let header = try setup.header(forgery)
        let error = await #expect(throws: LedgerError.self) { try await setup.verifier.verify(authorization: header) }
        #expect(error?.code == code && error?.kind == .unauthenticated, "\(forgery)")
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(header.dropFirst(7).prefix(20)) == false, "the token is never quoted")
    }

    @Test func anUnknownKeyIDFetchesTheKeysOnceAndNotOnEveryRequest() async throws {
        let setup = try await Setup()
        defer { Task { await setup.simulator.stop() } }
        _ = try await setup.verifier.verify(authorization: try setup.header())
        for _ in 0..<5 {
            let error = await #expect(throws: LedgerError.self) {
                try await setup.verifier.verify(authorization: try setup.header(.unknownKeyID))
            }
            #expect(error?.message.contains("a key Google does not publish") == true)
        }
        #expect(setup.certFetches() == 1, "a fetch a minute at most, whatever a forger sends")
        setup.clock.advance(61)
        _ = await #expect(throws: LedgerError.self) { try await setup.verifier.verify(authorization: try setup.header(.unknownKeyID)) }
        #expect(setup.certFetches() == 2, "one refetch once the interval has passed")
    }

    @Test func aRotatedKeyIsFetchedWhenItsKidFirstAppears() async throws {
        let setup = try await Setup(pusher: try PubSubPusher())
        defer { Task { await setup.simulator.stop() } }
        let old = try setup.header()
        _ = try await setup.verifier.verify(authorization: old)
        try setup.simulator.pusher.rotate()
        setup.clock.advance(61)
        _ = try await setup.verifier.verify(authorization: try setup.header())
        _ = try await setup.verifier.verify(authorization: old)
        #expect(setup.certFetches() == 2)
    }

    @Test func aPushWithoutABearerTokenIsRefused() async throws {
        let setup = try await Setup()
        defer { Task { await setup.simulator.stop() } }
        for header in [nil, "Basic dXNlcjpwYXNz", "Bearer not-a-jwt"] as [String?] {
            let error = await #expect(throws: LedgerError.self) { try await setup.verifier.verify(authorization: header) }
            #expect(error?.code == .invalidPushToken && error?.kind == .unauthenticated)
        }
    }

    /// The sender over HTTP to an endpoint that checks as the server will: 204 for a genuine push
    /// (its body decoded), 401 for a forged one.
    @Test func theSenderPushesToAnEndpointThatVerifiesIt() async throws {
        let setup = try await Setup()
        defer { Task { await setup.simulator.stop() } }
        let received = Mutex<[String]>([])
        let router = Router()
        let verifier = setup.verifier
        router.post("google/rtdn") { request, _ -> Response in
            do {
                _ = try await verifier.verify(authorization: request.headers[.authorization])
                let body = try await request.body.collect(upTo: 1 << 16)
                let push = try PubSubPush.decode(Data(body.readableBytesView))
                let token = try push.developerNotification().model.purchaseToken ?? ""
                received.withLock { $0.append(push.message.messageID + " " + token) }
                return Response(status: .noContent)
            } catch {
                return Response(status: .unauthorized)
            }
        }
        let endpoint = try await LoopbackServer.start(router, name: "rtdn-endpoint")
        let url = "http://127.0.0.1:\(endpoint.port)/google/rtdn"
        let body = try PubSubPusher.pushBody(
            PubSubPusher.subscriptionNotification(package: GoogleTestbed.packageName, type: 4, token: "tok.AO-J1Oabc"), messageID: "77")
        #expect(try await setup.simulator.pusher.send(body, to: url, audience: Self.audience, email: Self.email) == 204)
        #expect(try await setup.simulator.pusher.send(body, to: url, audience: Self.audience, email: Self.email, forgery: .expired) == 401)
        #expect(received.withLock { $0 } == ["77 tok.AO-J1Oabc"])
        await endpoint.stop()
    }
}
