import AppStoreServerAPI
import LedgerAccess
import LedgerChanges
import LedgerConsole
import LedgerIngestion
import LedgerPrivacy
import LedgerProjections
import LedgerProofs
import LedgerWebhooks

/// What the routes call, each part built once by the composition root (`LedgerServer`): the
/// HTTP edge decodes, authorizes, calls one of these and encodes; it never reaches storage.
package struct Endpoints: Sendable {
    package var ingestor: Ingestor
    package var lookups: AppleLookups
    package var offers: OfferDesk
    package var directory: AppDirectory
    package var actions: UserActions
    /// Two accounts of one person made one.
    package var merges: AccountMerges
    package var users: UserStateReader
    package var keys: APIKeyStore
    /// Failed authentications per client address.
    package var throttle: FailureThrottle
    /// Every admin action, recorded.
    package var audit: AuditLog
    package var exports: FinanceExports
    /// Everything held about a user, for a subject-access request.
    package var subjectAccess: SubjectAccess
    /// A user's identifiers erased, the books kept.
    package var erasures: UserErasures
    package var feed: ChangeFeed
    package var webhooks: WebhookRegistry
    /// The log's digests and proofs.
    package var proofs: ProofDesk
    package var console: ConsoleContext
    package var metrics: Metrics
    /// `/readyz`'s checks, made where the database and the replicas are known.
    package var readiness: @Sendable () async -> Readiness
    /// Gauges sampled when `/metrics` is scraped.
    package var gauges: @Sendable () async -> [Metrics.Gauge]

    package init(
        ingestor: Ingestor, lookups: AppleLookups, offers: OfferDesk, directory: AppDirectory, actions: UserActions,
        merges: AccountMerges,
        users: UserStateReader, keys: APIKeyStore, throttle: FailureThrottle, audit: AuditLog, exports: FinanceExports,
        subjectAccess: SubjectAccess, erasures: UserErasures, feed: ChangeFeed,
        webhooks: WebhookRegistry, proofs: ProofDesk,
        console: ConsoleContext, metrics: Metrics, readiness: @escaping @Sendable () async -> Readiness,
        gauges: @escaping @Sendable () async -> [Metrics.Gauge]
    ) {
        self.ingestor = ingestor
        self.lookups = lookups
        self.offers = offers
        self.directory = directory
        self.actions = actions
        self.merges = merges
        self.users = users
        self.keys = keys
        self.throttle = throttle
        self.audit = audit
        self.exports = exports
        self.subjectAccess = subjectAccess
        self.erasures = erasures
        self.feed = feed
        self.webhooks = webhooks
        self.proofs = proofs
        self.console = console
        self.metrics = metrics
        self.readiness = readiness
        self.gauges = gauges
    }
}

/// What `/readyz` answers: `ready`, `read_only` (the primary away, a replica answering: reads are
/// served, writes answer 503) or `unavailable`, with each check's state.
package struct Readiness: Sendable {
    package enum Status: String, Sendable { case ready, readOnly = "read_only", unavailable }
    package var status: Status
    package var checks: [String: String]

    package init(status: Status, checks: [String: String]) {
        self.status = status
        self.checks = checks
    }
}
