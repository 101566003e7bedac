import Foundation
import Hummingbird

/// `/metrics` (Prometheus text) and `/openapi.json` (the contract, validated against real
/// answers by the end-to-end tests). No key: they describe the service, not anyone's data.
struct OperationsController {
    let metrics: Metrics
    let gauges: @Sendable () async -> [Metrics.Gauge]

    func register(on router: Router<LedgerRequestContext>) {
        router.get("/metrics", use: scrape)
        router.get("/openapi.json", use: openAPI)
    }

    /// Gauges are read at scrape time, so the numbers are as fresh as the scrape.
    @Sendable func scrape(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: metrics.render(gauges: await gauges()))))
    }

    @Sendable func openAPI(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.data)))
    }
}

/// The OpenAPI 3.1 document, shipped inside the binary.
package enum OpenAPIDocument {
    package static let data: Data = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"), let data = try? Data(contentsOf: url) else {
            return Data(#"{"openapi":"3.1.0","info":{"title":"missing","version":"0"},"paths":{}}"#.utf8)
        }
        return data
    }()
}
