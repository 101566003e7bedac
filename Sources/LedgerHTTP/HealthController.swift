import Foundation
import Hummingbird
import LedgerCore

/// `/healthz` (the process is up) and `/readyz` (it can do its job: the database answers, the
/// schema is current, the projection caught up). Orchestrators restart on the first and route
/// traffic on the second.
struct HealthController: Sendable {
    let readiness: @Sendable () async -> Readiness

    var routes: RouteCollection<LedgerRequestContext> {
        let routes = RouteCollection(context: LedgerRequestContext.self)
        routes.get("/healthz", use: live)
        routes.get("/readyz", use: ready)
        return routes
    }

    @Sendable func live(_ request: Request, context: LedgerRequestContext) async throws -> Status {
        Status(status: "ok", checks: [:], version: BuildInfo.version, commit: BuildInfo.commit)
    }

    /// 503 with `Retry-After` while not ready, so a load balancer routes around this server.
    @Sendable func ready(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let now = await readiness()
        var response = try JSONResponse.encode(Status(status: now.status.rawValue, checks: now.checks))
        if now.status == .unavailable {
            response.status = .serviceUnavailable
            response.headers[.retryAfter] = String(LedgerError.retryAfterSeconds)
        }
        return response
    }

    struct Status: ResponseCodable {
        var status: String
        var checks: [String: String]
        /// `/healthz` only: what is running.
        var version: String? = nil
        var commit: String? = nil
    }
}

/// JSON bodies with an explicit status, for routes that choose their own.
enum JSONResponse {
    static func encode(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
