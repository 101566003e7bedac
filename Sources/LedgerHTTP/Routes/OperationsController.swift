import Foundation
import Hummingbird
import LedgerEventStore
import LedgerPostgres
import LedgerProjections

/// `/metrics` (Prometheus text) and `/openapi.json` (the contract, validated against real
/// answers by the end-to-end tests). No key: they describe the service, not anyone's data.
struct OperationsController {
    let metrics: Metrics
    let pool: PostgresPool
    let reads: ReadReplicas

    func register(on router: Router<LedgerRequestContext>) {
        router.get("/metrics") { _, _ in
            var gauges: [(name: String, help: String, value: Double)] = []
            // Sampled at scrape time; a database that is away leaves them out, not the whole page.
            if let rows = try? await pool.withConnection({ connection in
                (try EventStore.lastAppended(on: connection),
                 try ProjectionRunner.lag(on: connection))
            }) {
                gauges.append(("ledger_events_appended", "Position of the last appended event.", Double(rows.0)))
                gauges.append(("ledger_projection_lag_events", "Events the users projection has not applied yet.", Double(rows.1)))
            }
            gauges.append(("ledger_database_up", "1 when the last scrape reached the database.", gauges.isEmpty ? 0 : 1))
            let sources = reads.sources
            gauges.append(("ledger_reads_from_replica_total", "Reads a replica answered, having replayed what they must see.", Double(sources.replica)))
            gauges.append(("ledger_reads_from_primary_total", "Reads the primary answered because every replica stayed behind for too long.",
                           Double(sources.primary)))
            gauges.append(("ledger_reads_behind_fence_total", "Reads a replica answered with what it had while the primary was away.",
                           Double(sources.replicaBehindFence)))
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: metrics.render(gauges: gauges))))
        }
        router.get("/openapi.json") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.data)))
        }
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
