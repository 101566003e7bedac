import Foundation
import Hummingbird
import LoopbackServer
import Synchronization

/// An OpenTelemetry collector's trace endpoint for tests and benchmarks: OTLP/HTTP with protobuf
/// bodies (`POST /v1/traces`, what exporters send by default), decoded by hand and kept in
/// memory. Debian packages no collector; this is the part of one the tests need.
package final class OTLPReceiver: Sendable {
    private struct State {
        var spans: [ReceivedSpan] = []
        var requests = 0
        var refused: [String] = []
        var running: LoopbackServer?
        var port = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Every span received, in arrival order.
    package var spans: [ReceivedSpan] { state.withLock { $0.spans } }
    /// Export requests received, decoded or not.
    package var requests: Int { state.withLock { $0.requests } }
    /// Why requests were refused (a body that is not OTLP protobuf).
    package var refused: [String] { state.withLock { $0.refused } }
    /// What `OTEL_EXPORTER_OTLP_ENDPOINT` is set to for an exporter to send here.
    package var endpoint: String { "http://127.0.0.1:\(state.withLock { $0.port })" }

    package func start() async throws {
        let router = Router()
        router.post("/v1/traces") { [self] request, _ -> Response in
            let body = Array((try await request.body.collect(upTo: 16 << 20)).readableBytesView)
            state.withLock { $0.requests += 1 }
            guard request.headers[.contentType]?.hasPrefix("application/x-protobuf") == true else {
                state.withLock { $0.refused.append("content type \(request.headers[.contentType] ?? "none")") }
                return Response(status: .unsupportedMediaType)
            }
            do {
                let spans = try OTLPTraces.decode(body)
                state.withLock { $0.spans += spans }
            } catch {
                state.withLock { $0.refused.append("\(error)") }
                return Response(status: .badRequest)
            }
            // An empty ExportTraceServiceResponse: everything accepted.
            return Response(status: .ok, headers: [.contentType: "application/x-protobuf"])
        }
        let server = try await LoopbackServer.start(router, name: "otlp-receiver")
        state.withLock {
            $0.running = server; $0.port = server.port
        }
    }

    package func stop() async {
        await state.withLock { state in
            defer { state.running = nil }; return state.running
        }?.stop()
    }
}
