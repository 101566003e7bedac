import LedgerBackground
import LedgerCore
import LedgerEventStore
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import LedgerWebhooks

/// What `/readyz` and `/metrics` report of the database: the checks need the pool, the schema's
/// migrator and the replicas, which the HTTP edge never sees.
struct Health: Sendable {
    let pool: PostgresPool
    let migrator: Migrator
    let reads: ReadReplicas
    /// The background parts running in this process.
    let heartbeats: Heartbeats
    /// How long a part may fail (or stay silent) while the database answers before it counts as
    /// stuck: `/readyz` says so and the watchdog stops the server.
    let stuckAfter: Duration
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
        // A part failing while the database is away waits for it like everything else; failing
        // for so long while the database has answered all along, it has a fault of its own (a
        // part that was waiting for the database gets the time to find it back).
        let databaseAnswers = checks["database"] == "ok" && pool.health.available() > stuckAfter
        var stuck = false
        for part in heartbeats.all {
            let check = Self.check(part.status(silentAfter: Self.silentAfter), stuckAfter: databaseAnswers ? stuckAfter : nil)
            stuck = stuck || check.hasPrefix("stuck")
            checks[part.part] = check
        }
        let primaryReady = ["database", "migrations", "projections"].allSatisfy { checks[$0] == "ok" } && !stuck
        let readable = replicas.contains { $0.state.hasPrefix("ok") }
        let status: Readiness.Status = primaryReady ? .ready : (checks["projections"] == nil && readable ? .readOnly : .unavailable)
        return Readiness(status: status, checks: checks)
    }

    /// A part's rounds are shorter than this (poll intervals, the listener's idle ping, a
    /// statement's deadline): quieter for longer, it is hanging somewhere.
    static let silentAfter = Duration.seconds(30)

    /// One part's line in `/readyz`; `stuckAfter` nil: never stuck (the database is away).
    static func check(_ status: Heartbeat.Status, stuckAfter: Duration?) -> String {
        func seconds(_ duration: Duration) -> String { "\(duration.components.seconds) s" }
        switch status {
        case .ok:
            return "ok"
        case .failing(let duration, let error):
            let line = "failing for \(seconds(duration)): \(error)"
            return stuckAfter.map { duration > $0 } == true ? "stuck: \(line)" : line
        case .silent(let duration):
            let line = "silent for \(seconds(duration))"
            return stuckAfter.map { duration > $0 } == true ? "stuck: \(line)" : line
        }
    }

    /// Sampled at scrape time; a database that is away leaves its gauges out, not the whole page.
    @Sendable func gauges() async -> [Metrics.Gauge] {
        var gauges: [Metrics.Gauge] = []
        // Each table's owner reads it: the log's, the projection registry's, the webhooks'.
        if let rows = try? await pool.withConnection({ connection in
            (
                try EventStore.lastAppended(on: connection), try ProjectionRegistry.lag(on: connection),
                try WebhookRegistry.backlog(on: connection),
                try ProjectionRegistry.rebuildUnderWay(on: connection)
            )
        }) {
            gauges.append(Metrics.Gauge("ledger_events_appended", "Position of the last appended event.", Double(rows.0)))
            for lag in rows.1 {
                let (events, seconds) = (Double(lag.events), lag.seconds)
                switch lag.name {
                case "users":
                    gauges.append(Metrics.Gauge("ledger_projection_lag_events", "Events the users projection has not applied yet.", events))
                    gauges.append(
                        Metrics.Gauge(
                            "ledger_projection_lag_seconds", "How long the oldest event the users projection has not applied has waited.",
                            seconds))
                case "changes":
                    gauges.append(
                        Metrics.Gauge("ledger_change_lag_events", "Events the change projection has not derived changes from yet.", events))
                    gauges.append(
                        Metrics.Gauge(
                            "ledger_change_lag_seconds", "How long the oldest event the change projection has not read has waited.", seconds
                        ))
                default: continue
                }
            }
            let rebuild = rows.3
            gauges.append(
                Metrics.Gauge("ledger_rebuild_running", "1 while a rebuild of the users projection is under way.", rebuild == nil ? 0 : 1))
            gauges.append(
                Metrics.Gauge(
                    "ledger_rebuild_events", "Events the rebuild under way has read (0 when none is).", Double(rebuild?.events ?? 0)))
            gauges.append(
                Metrics.Gauge(
                    "ledger_rebuild_events_total_estimate", "Events in the log when the rebuild under way began (0 when none is).",
                    Double(rebuild?.total ?? 0)))
            let webhooks = rows.2
            gauges.append(
                Metrics.Gauge(
                    "ledger_webhook_backlog_users", "Users with changes a webhook has not been delivered yet (every webhook counted).",
                    Double(webhooks.users)))
            gauges.append(
                Metrics.Gauge(
                    "ledger_webhook_oldest_failure_seconds", "How long the oldest delivery still failing has been failing; 0 when none is.",
                    Double(webhooks.failingFor)))
            gauges.append(
                Metrics.Gauge(
                    "ledger_webhook_parked", "Changes parked after their retry window, waiting for a replay.", Double(webhooks.parked)))
        }
        if let owed = try? await GooglePurchases(pool: pool).overdue(olderThan: .seconds(24 * 3600)) {
            gauges.append(
                Metrics.Gauge(
                    "ledger_google_unacknowledged_overdue",
                    "Paid Google Play purchases not acknowledged (or consumed) with Google 24 hours after payment; Google refunds them at 72.",
                    Double(owed.count)))
            gauges.append(
                Metrics.Gauge(
                    "ledger_google_unacknowledged_oldest_seconds",
                    "How long ago the oldest paid Google Play purchase Google has not confirmed was paid; 0 when none waits.",
                    Double(owed.oldestSeconds)))
        }
        gauges.append(Metrics.Gauge("ledger_database_up", "1 when the last scrape reached the database.", gauges.isEmpty ? 0 : 1))
        let health = pool.health
        let usage = pool.usage
        gauges.append(Metrics.Gauge("ledger_database_pool_in_use", "Connections of the primary pool in use now.", Double(usage.inUse)))
        gauges.append(
            Metrics.Gauge("ledger_database_pool_waiting", "Callers waiting for a connection of the primary pool.", Double(usage.waiting)))
        gauges.append(
            Metrics.Gauge(
                "ledger_database_connections_opened_total",
                "Connections the primary pool opened (reconnections after a failover included).",
                Double(health.connectionsOpened), kind: .counter))
        gauges.append(
            Metrics.Gauge(
                "ledger_database_connections_lost_total",
                "Connections the primary pool dropped or could not open (gone, read-only, past the deadline).",
                Double(health.connectionsLost), kind: .counter))
        gauges.append(
            Metrics.Gauge(
                "ledger_database_unavailable_seconds",
                "How long the pool has been without a primary accepting its statements; 0 while it has one.",
                health.unavailable().seconds))
        gauges.append(
            Metrics.Gauge(
                "ledger_database_unavailable_seconds_total", "Time the pool spent without a primary, over the life of the process.",
                (health.unavailableTotal + health.unavailable()).seconds, kind: .counter))
        let sources = reads.sources
        gauges.append(
            Metrics.Gauge(
                "ledger_reads_from_replica_total", "Reads a replica answered, having replayed what they must see.", Double(sources.replica))
        )
        gauges.append(
            Metrics.Gauge(
                "ledger_reads_from_primary_total", "Reads the primary answered because every replica stayed behind for too long.",
                Double(sources.primary)))
        gauges.append(
            Metrics.Gauge(
                "ledger_reads_behind_fence_total", "Reads a replica answered with what it had while the primary was away.",
                Double(sources.replicaBehindFence)))
        gauges.append(
            Metrics.Gauge(
                "ledger_replica_waits_total", "Reads that found every replica behind what they must see and waited for one to replay.",
                Double(sources.waited), kind: .counter))
        gauges.append(
            Metrics.Gauge(
                "ledger_replica_wait_seconds_total", "Time reads spent waiting for a replica to replay, in all.", sources.waitedFor.seconds,
                kind: .counter))
        return gauges
    }
}
