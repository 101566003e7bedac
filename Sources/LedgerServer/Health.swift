import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerProjections

/// What `/readyz` and `/metrics` report of the database: the checks need the pool, the schema's
/// migrator and the replicas, which the HTTP edge never sees.
struct Health: Sendable {
    let pool: PostgresPool
    let migrator: Migrator
    let reads: ReadReplicas
    /// Events the users projection may be behind the log and still count as ready.
    static let maximumLag = 1000

    /// Ready: the primary answers with a current schema and a projection caught up. With the
    /// primary away but a replica answering, `read_only`. Each replica is listed with how far it
    /// has replayed.
    @Sendable func readiness() async -> Readiness {
        var checks: [String: String] = [:]
        do {
            let migrator = self.migrator
            let (pending, lag) = try await pool.withConnection { connection in
                let pending = try migrator.pending(connection).map(\.version)
                return (pending, pending.isEmpty ? try ProjectionRunner.lag(on: connection) : 0)
            }
            checks["database"] = "ok"
            checks["migrations"] = pending.isEmpty ? "ok" : "pending: \(pending)"
            // Caught up within a bound: a burst may keep the worker a little behind, a stuck one won't.
            checks["projections"] = lag <= Self.maximumLag ? "ok" : "behind by \(lag) events"
        } catch {
            checks["database"] = "unavailable: \(error)"
        }
        let replicas = await reads.status()
        for (name, state) in replicas { checks[name] = state }
        let primaryReady = ["database", "migrations", "projections"].allSatisfy { checks[$0] == "ok" }
        let readable = replicas.contains { $0.state.hasPrefix("ok") }
        let status: Readiness.Status = primaryReady ? .ready : (checks["projections"] == nil && readable ? .readOnly : .unavailable)
        return Readiness(status: status, checks: checks)
    }

    /// Sampled at scrape time; a database that is away leaves its gauges out, not the whole page.
    @Sendable func gauges() async -> [Metrics.Gauge] {
        var gauges: [Metrics.Gauge] = []
        if let rows = try? await pool.withConnection({ connection in
            (try EventStore.lastAppended(on: connection), try ProjectionRunner.lag(on: connection))
        }) {
            gauges.append(Metrics.Gauge("ledger_events_appended", "Position of the last appended event.", Double(rows.0)))
            gauges.append(Metrics.Gauge("ledger_projection_lag_events", "Events the users projection has not applied yet.", Double(rows.1)))
        }
        gauges.append(Metrics.Gauge("ledger_database_up", "1 when the last scrape reached the database.", gauges.isEmpty ? 0 : 1))
        let sources = reads.sources
        gauges.append(
            Metrics.Gauge("ledger_reads_from_replica_total", "Reads a replica answered, having replayed what they must see.", Double(sources.replica)))
        gauges.append(
            Metrics.Gauge(
                "ledger_reads_from_primary_total", "Reads the primary answered because every replica stayed behind for too long.",
                Double(sources.primary)))
        gauges.append(
            Metrics.Gauge(
                "ledger_reads_behind_fence_total", "Reads a replica answered with what it had while the primary was away.",
                Double(sources.replicaBehindFence)))
        return gauges
    }
}
