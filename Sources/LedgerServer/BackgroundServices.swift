import Hummingbird
import LedgerBackground
import LedgerChanges
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerProjections
import LedgerProofs
import LedgerReconciliation
import LedgerWebhooks
import Logging
import ServiceLifecycle
import Synchronization

/// A part that runs until the graceful shutdown cancels it, for the two LISTEN connections (with
/// threads and reconnections of their own, so no `BackgroundLoop`) and the webhook dispatcher
/// (whose loop runs inside the task group of its deliveries).
struct UntilShutdown: Service, CustomStringConvertible {
    /// What it does, for the service group's logs.
    let description: String
    let body: @Sendable () async -> Void

    init(_ description: String, _ body: @escaping @Sendable () async -> Void) {
        self.description = description
        self.body = body
    }

    func run() async throws {
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
        register(Heartbeat(part))
    }

    @discardableResult
    func register(_ heartbeat: Heartbeat) -> Heartbeat {
        parts.withLock { $0.append(heartbeat) }
        return heartbeat
    }

    /// Lists the loop's heartbeat; the loop, to run.
    func register(_ loop: BackgroundLoop) -> BackgroundLoop {
        register(loop.heartbeat)
        return loop
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
            endpoints: endpoints, host: host, port: port, limits: limits, logger: logger, accessLog: accessLog,
            onServerRunning: onServerRunning)
    }

    /// What runs beside the HTTP server, in start order (a service group stops them in reverse,
    /// so list the HTTP server after these: it stops first and finishes its requests while the
    /// projection worker still runs):
    /// - cross-process wake-ups for subscriptions (LISTEN) and for others (coalesced NOTIFY);
    /// - this server's cached timelines kept true to what any process's projection batches change;
    /// - the live projection and the change projection behind it (unless `projecting` is false),
    ///   with changes announced by other servers heard through LISTEN;
    ///   and the proof tree extended as events commit;
    /// - with a digest key and a sink: a signed digest of the log published every `digestInterval`;
    /// - webhook deliveries (unless `delivering` is false);
    /// - with `reconcileInterval`: Apple's notification history read on start-up and every interval
    ///   (`LEDGER_APPLE_RECONCILE_INTERVAL`), CONSUMPTION_REQUESTs answered every 15 s, and Google's
    ///   voided purchases read every hour (nil: none, as in tests that run them themselves);
    /// - Google told of every paid purchase (acknowledged or consumed), looked for every second:
    ///   Google refunds what is not acknowledged within three days (unless `acknowledging` is false);
    ///   so are Apple's transactions finished, every second, for apps whose server finishes them.
    package func backgroundServices(
        pollInterval: Duration = .milliseconds(250), projecting: Bool = true, delivering: Bool = true,
        reconcileInterval: Duration? = nil, acknowledging: Bool = true, logger: Logger
    ) -> [any Service] {
        let (store, timelines, pool, recovery, directory, consumption, changes) = (
            store, timelines, pool, recovery, directory, consumption, changes
        )
        let (notified, invalidated) = (heartbeats.register("notifications"), heartbeats.register("timeline cache"))
        var loops: [any Service] = [
            UntilShutdown("notifications") { [changes] in
                await store.runNotifications(also: [ChangeNotifications.channel: changes.heard], heartbeat: notified)
            },
            UntilShutdown("timeline cache") {
                await timelines.runInvalidations(configuration: pool.configuration, heartbeat: invalidated, logger: logger)
            },
        ]
        if projecting {
            // With replicas, a read after an ingestion waits on a replica for this worker's checkpoint
            // to pass the write (ReadFence): the worker then passes inline-projected events at once.
            let worker = ProjectionWorker(
                pool: pool, store: store, pollInterval: pollInterval, progress: progress, cache: timelines,
                durable: !reads.replicas.isEmpty, passingWindow: reads.replicas.isEmpty ? .milliseconds(10) : .zero, logger: logger)
            let changeWorker = ChangeWorker(
                pool: pool, progress: progress, notifications: changes, pollInterval: pollInterval,
                followers: [WebhookQueue.follower], logger: logger)
            loops.append(heartbeats.register(worker.loop))
            loops.append(heartbeats.register(changeWorker.loop))
            loops.append(heartbeats.register(proofs.tree.loop(heartbeat: Heartbeat("proof tree"))))
        }
        if proofs.key != nil, !digestPublisher.sinks.isEmpty {
            loops.append(heartbeats.register(digestPublisher.loop(every: digestInterval, heartbeat: Heartbeat("digests"))))
        }
        if delivering {
            let dispatcher = WebhookDispatcher(
                pool: pool, notifications: changes, policy: webhookPolicy, keyring: keyring, logger: logger,
                attempted: metrics.observeDelivery)
            heartbeats.register(dispatcher.heartbeat)
            loops.append(UntilShutdown(dispatcher.heartbeat.part) { await dispatcher.run() })
        }
        if acknowledging {
            loops.append(heartbeats.register(acknowledger.loop(every: .seconds(1))))
            loops.append(heartbeats.register(finisher.loop(every: .seconds(1))))
        }
        if let reconcileInterval {
            let reconciler = Reconciler(recovery: recovery, directory: directory, interval: reconcileInterval, logger: logger)
            loops.append(heartbeats.register(reconciler.loop))
            loops.append(heartbeats.register(consumption.loop(every: .seconds(15))))
            loops.append(heartbeats.register(googleRefunds.loop))
        }
        return loops
    }
}
