import Foundation
import Hummingbird
import LedgerPostgres
import LedgerProjections

/// `/healthz` (the process is up) and `/readyz` (it can do its job: the database answers and the
/// schema is current). Orchestrators restart on the first and route traffic on the second.
struct HealthController: Sendable {
    let services: LedgerServices
    /// Events the users projection may be behind the log and still count as ready.
    static let maximumLag = 1000

    var routes: RouteCollection<LedgerRequestContext> {
        let routes = RouteCollection(context: LedgerRequestContext.self)
        routes.get("/healthz") { _, _ in Status(status: "ok", checks: [:]) }
        routes.get("/readyz") { _, _ in try await readiness() }
        return routes
    }

    struct Status: ResponseCodable {
        var status: String
        var checks: [String: String]
    }

    /// Ready: the primary answers with a current schema and a projection caught up. With the
    /// primary away but a replica answering, `read_only` (200): reads are served, writes answer 503.
    /// Each replica is listed with how far it has replayed.
    private func readiness() async throws -> Response {
        var checks: [String: String] = [:]
        do {
            let migrator = services.migrator
            let (pending, lag) = try await services.pool.withConnection { connection in
                let pending = try migrator.pending(connection).map(\.version)
                return (pending, pending.isEmpty ? try ProjectionRunner.lag(on: connection) : 0)
            }
            checks["database"] = "ok"
            checks["migrations"] = pending.isEmpty ? "ok" : "pending: \(pending)"
            // Caught up within a bound: a burst may keep the worker a little behind, a stuck one won't.
            checks["projections"] = lag <= Self.maximumLag ? "ok" : "behind by \(lag) events"
        } catch let error as PostgresError {
            checks["database"] = "unavailable: \(error)"
        }
        let replicas = await services.reads.status()
        for (name, state) in replicas { checks[name] = state }
        let primaryReady = ["database", "migrations", "projections"].allSatisfy { checks[$0] == "ok" }
        let readable = replicas.contains { $0.state.hasPrefix("ok") }
        let status = primaryReady ? "ready" : (checks["projections"] == nil && readable ? "read_only" : "unavailable")
        var response = try JSONResponse.encode(Status(status: status, checks: checks))
        if status == "unavailable" {
            response.status = .serviceUnavailable
            response.headers[.retryAfter] = "5"
        }
        return response
    }
}

/// JSON bodies with an explicit status, for routes that choose their own.
enum JSONResponse {
    static func encode(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
