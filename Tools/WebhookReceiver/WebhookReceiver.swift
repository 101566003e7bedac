import Crypto
import Foundation
import Hummingbird
import LoopbackServer
import Synchronization

/// A game server's webhook endpoint, for tests and benchmarks: it checks each delivery's
/// signature the way docs/webhooks.md tells receivers to (independently of the ledger's own
/// code), records what it accepted, and misbehaves on demand — errors, answers too slow, down.
package final class WebhookReceiver: Sendable {
    package struct Delivery: Sendable {
        package var id: String
        package var userID: String
        package var type: String
        package var position: Int64
        package var body: String
        package var signatureValid: Bool
        package var arrivedAt: Date
        /// The query of the URL it was sent to, if any.
        package var query: String?
        /// The W3C trace context the delivery came with, if any.
        package var traceparent: String?
    }

    /// What to do with one attempt.
    package enum Answer: Sendable {
        case accept
        case fail(status: Int)
        /// Answer only after `duration` (longer than the sender's timeout: it gives up first).
        case hang(Duration)
    }

    private struct State {
        var accepted: [Delivery] = []
        var attempts = 0
        var running: LoopbackServer?
        var port = 0
    }

    let secret: String
    let behaviour: @Sendable (_ attempt: Int, _ id: String) -> Answer
    private let state = Mutex(State())

    /// `behaviour`: given the attempt's number (from 1, over all attempts) and the change id.
    package init(secret: String, behaviour: @escaping @Sendable (_ attempt: Int, _ id: String) -> Answer = { _, _ in .accept }) {
        self.secret = secret
        self.behaviour = behaviour
    }

    /// Every delivery answered 2xx, in arrival order.
    package var accepted: [Delivery] { state.withLock { $0.accepted } }
    package var attempts: Int { state.withLock { $0.attempts } }
    package var url: String { "http://127.0.0.1:\(state.withLock { $0.port })/hook" }

    /// Listens on 127.0.0.1 (port 0 the first time: any free one; afterwards the same one again).
    package func start() async throws {
        let router = Router()
        router.post("/hook") { [self] request, _ in
            let body = Array((try await request.body.collect(upTo: 1 << 20)).readableBytesView)
            let id = request.headers[.init("Ledger-Webhook-Id")!] ?? ""
            let signature = request.headers[.init("Ledger-Signature")!] ?? ""
            let attempt = state.withLock {
                $0.attempts += 1; return $0.attempts
            }
            switch behaviour(attempt, id) {
            case .fail(let status): return Response(status: .init(code: status))
            case .hang(let duration): try? await Task.sleep(for: duration); return Response(status: .ok)
            case .accept: break
            }
            let fields = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
            let delivery = Delivery(
                id: id, userID: fields["user_id"] as? String ?? "", type: fields["type"] as? String ?? "",
                position: (fields["position"] as? NSNumber)?.int64Value ?? 0, body: String(decoding: body, as: UTF8.self),
                signatureValid: Self.verify(signature, body: body, secret: secret) && fields["id"] as? String == id,
                arrivedAt: Date(), query: request.uri.query, traceparent: request.headers[.init("traceparent")!])
            state.withLock { $0.accepted.append(delivery) }
            return Response(status: .noContent)
        }
        let server = try await LoopbackServer.start(router, port: state.withLock { $0.port }, name: "webhook-receiver")
        state.withLock {
            $0.running = server; $0.port = server.port
        }
    }

    /// Stops listening: deliveries are refused until `start()` again.
    package func stop() async {
        await state.withLock { state in
            defer { state.running = nil }; return state.running
        }?.stop()
    }

    /// `Ledger-Signature: t=…,v1=…` checked as docs/webhooks.md shows: HMAC-SHA256 of "t.body".
    static func verify(_ header: String, body: [UInt8], secret: String) -> Bool {
        let parts = Dictionary(
            header.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
                .filter { $0.count == 2 }.map { ($0[0], $0[1]) }, uniquingKeysWith: { a, _ in a })
        guard let t = parts["t"], let v1 = parts["v1"], let time = Double(t), abs(Date().timeIntervalSince1970 - time) < 300 else {
            return false
        }
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(t).".utf8) + body, using: SymmetricKey(data: Data(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined() == v1
    }
}
