import Foundation
import Hummingbird
import Logging
import Synchronization

/// Apple's legacy `verifyReceipt`, production and sandbox, on loopback: receipts registered by a
/// test answer as Apple would (21007 for a sandbox receipt sent to production, 21008 the other
/// way, 21004 for a wrong shared secret, 21002 for unknown data), and scripted outcomes (any
/// status, an HTTP error, a delay) are served first, in order, to exercise retries and fallbacks.
package final class VerifyReceiptServer: Sendable {
    package enum Endpoint: String, Sendable { case production, sandbox }
    package enum Scripted: Sendable {
        case status(Int)
        /// A status with Apple's `is-retryable: true`.
        case retryable(Int)
        case httpError(Int)
        case delay(Duration)
    }

    struct Registered {
        var answer: Data
        var environment: Endpoint
        var sharedSecret: String?
    }

    struct State {
        var receipts: [String: Registered] = [:]
        var scripts: [Endpoint: [Scripted]] = [:]
        var calls: [Endpoint: Int] = [:]
    }

    private let state = Mutex(State())
    private let running = Mutex<Task<Void, any Error>?>(nil)

    package init() {}

    /// Registers an answer (see `SimulatedApp.receiptAnswer`) and returns its `receipt-data`.
    package func register(_ answer: [String: Any], environment: Endpoint, sharedSecret: String? = nil) throws -> String {
        let token = "simulated-receipt:" + UUID().uuidString
        let data = try JSONSerialization.data(withJSONObject: answer)
        state.withLock { $0.receipts[token] = Registered(answer: data, environment: environment, sharedSecret: sharedSecret) }
        return Data(token.utf8).base64EncodedString()
    }

    /// Outcomes served, in order, before any receipt is looked at.
    package func script(_ endpoint: Endpoint, _ outcomes: [Scripted]) {
        state.withLock { $0.scripts[endpoint, default: []] += outcomes }
    }

    package func calls(_ endpoint: Endpoint) -> Int { state.withLock { $0.calls[endpoint] ?? 0 } }

    /// Starts listening on 127.0.0.1 (port 0: any free one); returns the two verifyReceipt URLs.
    /// `routes` may add more routes on the same listener (the simulator command's control API).
    package func start(
        port: Int = 0, host: String = "127.0.0.1", routes: (Router<BasicRequestContext>) -> Void = { _ in }
    ) async throws -> (production: String, sandbox: String) {
        let router = Router()
        routes(router)
        router.post("/:endpoint/verifyReceipt") { [self] request, context in
            guard let endpoint = context.parameters.get("endpoint").flatMap(Endpoint.init(rawValue:)) else {
                return Response(status: .notFound)
            }
            let body = try await request.body.collect(upTo: 16 * 1024 * 1024)
            return try await answer(Data(body.readableBytesView), at: endpoint)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "appstore-simulator")
        logger.logLevel = .critical // a stopped simulator's cancelled connections are not news
        let app = Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "appstore-simulator"),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? port) }, logger: logger)
        running.withLock { $0 = Task { try await app.run() } }
        var iterator = stream.makeAsyncIterator()
        guard let bound = await iterator.next() else { throw CancellationError() }
        let base = "http://\(host):\(bound)"
        return (base + "/production/verifyReceipt", base + "/sandbox/verifyReceipt")
    }

    package func stop() {
        running.withLock { $0?.cancel() }
    }

    private func answer(_ body: Data, at endpoint: Endpoint) async throws -> Response {
        let scripted: Scripted? = state.withLock { state in
            state.calls[endpoint, default: 0] += 1
            return state.scripts[endpoint]?.isEmpty == false ? state.scripts[endpoint]!.removeFirst() : nil
        }
        switch scripted {
        case .status(let code): return json(["status": code])
        case .retryable(let code): return json(["status": code, "is-retryable": true])
        case .httpError(let code): return Response(status: .init(code: code))
        case .delay(let duration):
            try await Task.sleep(for: duration)
        case nil: break
        }
        guard let request = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let receiptData = request["receipt-data"] as? String
        else { return json(["status": 21000]) }
        guard let decoded = Data(base64Encoded: receiptData), let token = String(data: decoded, encoding: .utf8),
            let registered = state.withLock({ $0.receipts[token] })
        else { return json(["status": 21002]) }
        if registered.environment == .sandbox, endpoint == .production { return json(["status": 21007]) }
        if registered.environment == .production, endpoint == .sandbox { return json(["status": 21008]) }
        if let secret = registered.sharedSecret, request["password"] as? String != secret { return json(["status": 21004]) }
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: registered.answer)))
    }

    private func json(_ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
