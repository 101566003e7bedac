import AppStore
import AppStoreServerAPI
import Foundation
import GooglePlay
import LedgerAccess
import LedgerChanges
import LedgerConsole
import LedgerEventStore
import LedgerHTTP
import LedgerIngestion
import LedgerPostgres
import LedgerPrivacy
import LedgerProjections
import LedgerProofs
import LedgerReconciliation
import LedgerSecrets
import LedgerWebhooks
import Logging

/// The composition root: every part of a running ledger built once from its pools, for
/// `ledger serve`, the commands that record what they learn from Apple, the tests and the
/// benchmarks. The HTTP edge gets `endpoints`; the service group gets `backgroundServices`.
package struct LedgerServices: Sendable {
    package let pool: PostgresPool
    /// Pools on PostgreSQL streaming replicas of `pool`'s database (may be none).
    package let replicaPools: [PostgresPool]
    package let store: EventStore
    package let migrator: Migrator
    package let ingestor: Ingestor
    package let actions: UserActions
    package let merges: AccountMerges
    package let erasures: UserErasures
    package let keys: APIKeyStore
    /// Failed authentications per client address (API keys and console sign-ins alike).
    package let throttle: FailureThrottle
    /// Every admin action, recorded.
    package let audit: AuditLog
    package let metrics: Metrics
    package let directory: AppDirectory
    /// Apple's evidence as it came, content-addressed: written by ingestion, shown by the console.
    package let evidence: EvidenceStore
    /// The projection worker reports through this, so writes answer as soon as it applied them.
    package let progress: ProjectionProgress
    /// The timelines this server has read or written, kept true by every batch's NOTIFY.
    package let timelines: TimelineCache
    /// Where user states, audit trails and exports are read: replicas when configured.
    package let reads: ReadReplicas
    package let users: UserStateReader
    /// What is asked of Apple's App Store Server API: sync on restore, order lookup.
    package let lookups: AppleLookups
    /// Missed notifications recovered from Apple's notification history.
    package let recovery: NotificationRecovery
    /// Apple's CONSUMPTION_REQUESTs answered.
    package let consumption: ConsumptionResponder
    /// Google told of every paid purchase: acknowledged or consumed.
    package let acknowledger: GoogleAcknowledger
    /// Apple's transactions finished for apps whose server finishes them.
    package let finisher: AppleFinisher
    /// Refunds and chargebacks read from Google's voided purchases list.
    package let googleRefunds: GoogleRefundPoll
    /// `ledger reconcile` on Google Play: the voided list and every known subscription asked again.
    package let googleReconciliation: GoogleReconciliation
    /// Changes announced, by this server's change projection or any other's (LISTEN).
    package let changes: ChangeNotifications
    /// Each app's webhooks, and how their deliveries are paced.
    package let webhooks: WebhookRegistry
    package let webhookPolicy: WebhookPolicy
    /// The keys stored secrets are sealed under (the caller has checked them: `SecretVault.prepare`).
    package let keyring: Keyring
    /// How the background parts fare, for `/readyz`.
    package let heartbeats = Heartbeats()
    /// The Merkle tree over the log, its digests and proofs.
    package let proofs: ProofDesk
    /// Where digests go on a schedule (nothing without a key and a sink), and how often.
    package let digestPublisher: DigestPublisher
    package let digestInterval: Duration
    /// How long a background part may fail while the database answers before the server counts
    /// as stuck (`LEDGER_STUCK_AFTER`).
    package let stuckAfter: Duration

    package init(
        pool: PostgresPool, store: EventStore, migrator: Migrator, verifier: SignedDataVerifier,
        keyring: Keyring, receipts: VerifyReceiptConfiguration, serverAPI: ServerAPIConfiguration = ServerAPIConfiguration(),
        google: GooglePlayConfiguration = GooglePlayConfiguration(), replicas: [PostgresPool] = [],
        replicaWait: Duration = .milliseconds(250),
        keyCacheTTL: Duration = .seconds(2), webhookPolicy: WebhookPolicy = WebhookPolicy(), throttle: FailureThrottle = FailureThrottle(),
        stuckAfter: Duration = .seconds(60), digestKey: DigestKey? = nil, digestSinks: DigestPublisher.Sinks = DigestPublisher.Sinks(),
        digestInterval: Duration = .seconds(3600), logger: Logger
    ) {
        self.stuckAfter = stuckAfter
        self.proofs = ProofDesk(tree: ProofTree(pool: pool, logger: logger), key: digestKey)
        self.digestPublisher = DigestPublisher(desk: proofs, sinks: digestSinks, targets: webhookPolicy.targets, logger: logger)
        self.digestInterval = digestInterval
        let metrics = Metrics()
        self.pool = pool
        self.replicaPools = replicas
        self.store = store
        self.migrator = migrator
        self.keyring = keyring
        self.metrics = metrics
        let client = VerifyReceiptClient(configuration: receipts, logger: logger) {
            metrics.observeApple(api: "verifyReceipt", endpoint: $0.endpoint, status: $0.status, outcome: $0.outcome)
        }
        let progress = ProjectionProgress()
        let timelines = TimelineCache()
        self.timelines = timelines
        let reads = ReadReplicas(
            primary: pool, replicas: replicas, fence: timelines.fence, maximumWait: replicaWait,
            checkpoint: ProjectionRunner.activeCheckpoint(on:), logger: logger)
        self.reads = reads
        let users = UserStateReader(pool: pool, cache: timelines, replicas: reads)
        self.users = users
        let freshness = ProjectionFreshness(pool: pool, progress: progress)
        let directory = AppDirectory(pool: pool, store: store, freshness: freshness, keyring: keyring, replicas: reads)
        self.progress = progress
        self.directory = directory
        let evidence = EvidenceStore(pool: pool)
        self.evidence = evidence
        let publishers = GooglePublishers(configuration: google, logger: logger) {
            metrics.observeGoogle(endpoint: $0.endpoint, status: $0.status, outcome: $0.outcome.rawValue)
        }
        self.ingestor = Ingestor(
            store: store, evidence: evidence, directory: directory, verifier: verifier, receipts: client,
            freshness: freshness, reader: users, google: publishers, logger: logger, groupWritten: metrics.observeGroup)
        self.acknowledger = GoogleAcknowledger(
            purchases: ingestor.googlePurchases, directory: directory, publishers: publishers, logger: logger
        ) { outcome in
            let name = outcome.hasPrefix("nothing") ? "nothing_to_tell" : outcome.replacingOccurrences(of: " ", with: "_")
            metrics.increment("ledger_google_acknowledgements_total", ["outcome": name])
        }
        self.googleRefunds = GoogleRefundPoll(
            ingestor: ingestor, directory: directory, pool: pool, interval: .seconds(3600), logger: logger)
        self.googleReconciliation = GoogleReconciliation(ingestor: ingestor, refunds: googleRefunds, logger: logger)
        let api = AppStoreServerAPIClient(configuration: serverAPI, logger: logger) {
            metrics.observeApple(api: "app_store_server_api", endpoint: $0.endpoint, status: $0.status, outcome: $0.outcome)
        }
        self.lookups = AppleLookups(ingestor: ingestor, api: api)
        self.finisher = AppleFinisher(finishes: ingestor.appleFinishes, directory: directory, api: api, logger: logger) { outcome in
            metrics.increment("ledger_apple_finishes_total", ["outcome": outcome])
        }
        self.recovery = NotificationRecovery(ingestor: ingestor, api: api, pool: pool, logger: logger) { result, _ in
            metrics.increment("ledger_reconcile_notifications_total", ["result": result])
        }
        self.consumption = ConsumptionResponder(
            requests: ingestor.consumptionRequests, directory: directory, reader: users, api: api, logger: logger
        ) {
            outcome in
            metrics.increment("ledger_consumption_requests_total", ["outcome": outcome])
        }
        self.actions = UserActions(store: store, directory: directory, freshness: freshness, logger: logger)
        self.merges = AccountMerges(
            store: store, directory: directory, tokens: ingestor.tokens, freshness: freshness, reader: users, logger: logger)
        self.erasures = UserErasures(store: store, freshness: freshness, sources: Self.privacySources, logger: logger)
        self.keys = APIKeyStore(pool: pool, replicas: reads, cacheTTL: keyCacheTTL)
        self.changes = ChangeNotifications()
        self.webhooks = WebhookRegistry(pool: pool, targets: webhookPolicy.targets, keyring: keyring)
        self.webhookPolicy = webhookPolicy
        self.throttle = throttle
        self.audit = AuditLog(pool: pool)
        self.endpoints = Self.endpoints(
            pool: pool, metrics: metrics, reads: reads, users: users, keys: keys, directory: directory, actions: actions,
            evidence: evidence,
            ingestor: ingestor, lookups: lookups, throttle: throttle, audit: audit, merges: merges, erasures: erasures, changes: changes,
            webhooks: webhooks, proofs: proofs,
            health: Health(pool: pool, migrator: migrator, reads: reads, heartbeats: heartbeats, stuckAfter: stuckAfter))
    }

    /// What the HTTP edge calls.
    package let endpoints: Endpoints

    /// Built once, with the rest: the edge asks for it per application, and the parts it holds
    /// (the console's sessions, readiness) are the server's, not a copy per caller.
    private static func endpoints(
        pool: PostgresPool, metrics: Metrics, reads: ReadReplicas, users: UserStateReader, keys: APIKeyStore, directory: AppDirectory,
        actions: UserActions, evidence: EvidenceStore, ingestor: Ingestor, lookups: AppleLookups, throttle: FailureThrottle,
        audit: AuditLog,
        merges: AccountMerges, erasures: UserErasures, changes: ChangeNotifications, webhooks: WebhookRegistry, proofs: ProofDesk,
        health: Health
    ) -> Endpoints {
        let console = ConsoleContext(
            sessions: ConsoleSessions(pool: pool, keys: keys), directory: directory, reader: users, metrics: MetricsReader(reads: reads),
            actions: actions, evidence: evidence, tokens: ingestor.tokens, lookups: lookups, retention: RetentionDesk(ingestor: ingestor),
            throttle: throttle, audit: audit,
            refusals: {
                metrics.counts("ledger_evidence_total", by: "result") { $0 != "result" || $1 != "accepted" }.map {
                    (code: $0.0, count: $0.1)
                }
            })
        return Endpoints(
            ingestor: ingestor, lookups: lookups, offers: OfferDesk(ingestor: ingestor), directory: directory, actions: actions,
            merges: merges, users: users, keys: keys, throttle: throttle, audit: audit, exports: FinanceExports(reads: reads),
            subjectAccess: SubjectAccess(pool: pool, reader: UserStateReader(pool: pool), sources: Self.privacySources), erasures: erasures,
            feed: ChangeFeed(pool: pool, notifications: changes),
            webhooks: webhooks, proofs: proofs, console: console, metrics: metrics, readiness: health.readiness, gauges: health.gauges)
    }
}
