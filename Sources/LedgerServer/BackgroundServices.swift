import Hummingbird
import LedgerBackground
import LedgerChanges
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerProjections
import LedgerReconciliation
import LedgerWebhooks
import Logging
import ServiceLifecycle
import Synchronization

/// A loop that lives as long as the server, stopped by a graceful shutdown: every background part
/// of `ledger serve` is one, so the service group starts and stops them all the same way.
package struct BackgroundLoop: Service, CustomStringConvertible {
    /// What it does, for the service group's logs.
    package let description: String
    let body: @Sendable () async -> Void

    package init(_ description: String, _ body: @escaping @Sendable () async -> Void) {
        self.description = description
        self.body = body
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown { await body() }
    }
}

/// The server's pools as a service: it waits for the graceful shutdown and then closes them.
/// Listed first in the service group, it is stopped last, once everything that uses the pools
/// has stopped.
struct ClosingPools: Service, CustomStringConvertible {
    let pools: [PostgresPool]
    var description: String { "database pools" }

    func run() async throws {
        try? await gracefulShutdown()
        for pool in pools { await pool.close() }
    }
}

/// The background parts of this server that report how they fare (`Heartbeat`), for `/readyz`:
/// registered as `backgroundServices` builds them, so only what runs is listed.
package final class Heartbeats: Sendable {
    private let parts = Mutex<[Heartbeat]>([])

    package init() {}

    func register(_ part: String) -> Heartbeat {
        let heartbeat = Heartbeat(part)
        parts.withLock { $0.append(heartbeat) }
        return heartbeat
    }

    package var all: [Heartbeat] { parts.withLock { $0 } }
}

extension LedgerServices {
    /// The pools (primary and replicas), closed when the service group stops: list it first.
    package var pools: some Service { ClosingPools(pools: [pool] + replicaPools) }

    /// The HTTP server over `endpoints`.
    package func application(
        host: String, port: Int, limits: RequestLimits = RequestLimits(), logger: Logger, accessLog: Bool = false,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        buildApplication(
            endpoints: endpoints, host: host, port: port, limits: limits, logger: logger, accessLog: accessLog, onServerRunning: onServerRunning)
    }

    /// What runs beside the HTTP server, in start order (a service group stops them in reverse,
    /// so list the HTTP server after these: it stops first and finishes its requests while the
    /// projection worker still runs):
    /// - cross-process wake-ups for subscriptions (LISTEN) and for others (coalesced NOTIFY);
    /// - this server's cached timelines kept true to what any process's projection batches change;
    /// - the live projection and the change projection behind it (unless `projecting` is false),
    ///   with changes announced by other servers heard through LISTEN;
    /// - webhook deliveries (unless `delivering` is false);
    /// - with `reconcileInterval`: Apple's notification history read on start-up and every interval
    ///   (`LEDGER_APPLE_RECONCILE_INTERVAL`), and CONSUMPTION_REQUESTs answered every 15 s (nil:
    ///   neither, as in tests that run them themselves).
    package func backgroundServices(
        pollInterval: Duration = .milliseconds(250), projecting: Bool = true, delivering: Bool = true,
        reconcileInterval: Duration? = nil, logger: Logger
    ) -> [any Service] {
        let (store, timelines, pool, recovery, directory, consumption, changes) = (store, timelines, pool, recovery, directory, consumption, changes)
        // With replicas, a read after an ingestion waits on a replica for this worker's checkpoint
        // to pass the write (ReadFence): the worker then passes inline-projected events at once.
        let worker = ProjectionWorker(
            pool: pool, store: store, pollInterval: pollInterval, progress: progress, cache: timelines,
            durable: !reads.replicas.isEmpty, passingWindow: reads.replicas.isEmpty ? .milliseconds(10) : .zero,
            heartbeat: projecting ? heartbeats.register("projection worker") : nil, logger: logger)
        let (notified, invalidated) = (heartbeats.register("notifications"), heartbeats.register("timeline cache"))
        var loops = [
            BackgroundLoop("notifications") { [changes] in
                await store.runNotifications(also: [ChangeNotifications.channel: changes.heard], heartbeat: notified)
            },
            BackgroundLoop("timeline cache") { await timelines.runInvalidations(configuration: pool.configuration, heartbeat: invalidated, logger: logger) },
        ]
        if projecting {
            let changeWorker = ChangeWorker(
                pool: pool, progress: progress, notifications: changes, pollInterval: pollInterval, heartbeat: heartbeats.register("change projection"),
                logger: logger)
            loops.append(BackgroundLoop("projection worker") { await worker.run() })
            loops.append(BackgroundLoop("change projection") { await changeWorker.run() })
        }
        if delivering {
            let dispatcher = WebhookDispatcher(
                pool: pool, notifications: changes, policy: webhookPolicy, keyring: keyring, heartbeat: heartbeats.register("webhook deliveries"),
                logger: logger, attempted: metrics.observeDelivery)
            loops.append(BackgroundLoop("webhook deliveries") { await dispatcher.run() })
        }
        if let reconcileInterval {
            let reconciler = Reconciler(recovery: recovery, directory: directory, interval: reconcileInterval, logger: logger)
            loops.append(BackgroundLoop("reconciliation with Apple") { await reconciler.run() })
            loops.append(BackgroundLoop("consumption responder") { await consumption.run(every: .seconds(15)) })
        }
        return loops
    }
}
