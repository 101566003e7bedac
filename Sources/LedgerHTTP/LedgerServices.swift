import AppStore
import AppStoreServerAPI
import Hummingbird
import LedgerAccess
import LedgerChanges
import LedgerEventStore
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import LedgerReconciliation
import LedgerWebhooks
import Logging

/// What the HTTP routes need from the rest of the ledger. Built once by `ledger serve` (and by
/// tests), so routes never reach for globals.
package struct LedgerServices: Sendable {
    package var pool: PostgresPool
    package var store: EventStore
    package var migrator: Migrator
    package var ingestor: Ingestor
    package var actions: UserActions
    package var keys: APIKeyStore
    package var metrics: Metrics
    package var directory: AppDirectory
    /// Run the projection worker with this (`ProjectionWorker(progress:)`) so that writes answer
    /// as soon as it has applied them.
    package var progress: ProjectionProgress
    /// Run the projection worker with this too (`ProjectionWorker(cache:)`), and
    /// its invalidations beside it (both in `backgroundServices`).
    package var timelines: TimelineCache
    /// Where user states, audit trails and exports are read: replicas when configured.
    package var reads: ReadReplicas
    /// What is asked of Apple's App Store Server API: sync on restore, order lookup.
    package var lookups: AppleLookups
    /// Missed notifications recovered from Apple's notification history.
    package var recovery: NotificationRecovery
    /// Apple's CONSUMPTION_REQUESTs answered.
    package var consumption: ConsumptionResponder
    /// Changes announced, by this server's change projection or any other's (LISTEN).
    package var changes: ChangeNotifications
    /// Each app's webhooks, and how their deliveries are paced.
    package var webhooks: WebhookRegistry
    package var webhookPolicy: WebhookPolicy

    /// `replicas`: pools on PostgreSQL streaming replicas of `pool`'s database (may be none).
    package init(pool: PostgresPool, store: EventStore, migrator: Migrator, verifier: SignedDataVerifier,
                receipts: VerifyReceiptConfiguration, serverAPI: ServerAPIConfiguration = ServerAPIConfiguration(), replicas: [PostgresPool] = [], replicaWait: Duration = .milliseconds(250),
                keyCacheTTL: Duration = .seconds(2), webhookPolicy: WebhookPolicy = WebhookPolicy(), logger: Logger) {
        let metrics = Metrics()
        self.pool = pool
        self.store = store
        self.migrator = migrator
        self.metrics = metrics
        let client = VerifyReceiptClient(configuration: receipts, logger: logger) { outcome in
            metrics.increment("ledger_apple_calls_total", ["api": "verifyReceipt", "outcome": outcome.rawValue])
        }
        let progress = ProjectionProgress()
        let timelines = TimelineCache()
        self.timelines = timelines
        let reads = ReadReplicas(primary: pool, replicas: replicas, fence: timelines.fence, maximumWait: replicaWait, logger: logger)
        self.reads = reads
        let freshness = ProjectionFreshness(pool: pool, progress: progress)
        let directory = AppDirectory(pool: pool, store: store, freshness: freshness, replicas: reads)
        self.progress = progress
        self.directory = directory
        self.ingestor = Ingestor(store: store, evidence: EvidenceStore(pool: pool), directory: directory, verifier: verifier, receipts: client,
                                 freshness: freshness, reader: UserStateReader(pool: pool, cache: timelines, replicas: reads), logger: logger)
        let api = AppStoreServerAPIClient(configuration: serverAPI, logger: logger) { outcome in
            metrics.increment("ledger_apple_calls_total", ["api": "app_store_server_api", "outcome": outcome.rawValue])
        }
        self.lookups = AppleLookups(ingestor: ingestor, api: api)
        self.recovery = NotificationRecovery(ingestor: ingestor, api: api, pool: pool, logger: logger) { result, _ in
            metrics.increment("ledger_reconcile_notifications_total", ["result": result])
        }
        self.consumption = ConsumptionResponder(requests: ingestor.consumptionRequests, directory: directory,
                                                reader: UserStateReader(pool: pool, cache: timelines, replicas: reads), api: api, logger: logger) { outcome in
            metrics.increment("ledger_consumption_requests_total", ["outcome": outcome])
        }
        self.actions = UserActions(store: store, directory: directory, freshness: freshness, logger: logger)
        self.keys = APIKeyStore(pool: pool, replicas: reads, cacheTTL: keyCacheTTL)
        self.changes = ChangeNotifications()
        self.webhooks = WebhookRegistry(pool: pool)
        self.webhookPolicy = webhookPolicy
    }
}
