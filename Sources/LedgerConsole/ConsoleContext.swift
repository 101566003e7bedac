import Foundation
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerProjections

/// What the console reads and acts through: the same parts the API uses.
package struct ConsoleContext: Sendable {
    package var sessions: ConsoleSessions
    package var directory: AppDirectory
    package var reader: UserStateReader
    package var metrics: MetricsReader
    package var actions: UserActions
    package var evidence: EvidenceStore
    package var tokens: AppAccountTokens
    package var lookups: AppleLookups
    /// The retention rules' outcomes, for the app page.
    package var retention: RetentionDesk
    /// Failed sign-ins, counted with the API's failed keys.
    package var throttle: FailureThrottle
    /// Where the console's actions are recorded, and what its audit page lists.
    package var audit: AuditLog
    /// Evidence refused since this server started, by code (from its metrics).
    package var refusals: @Sendable () -> [(code: String, count: Int)]

    package init(
        sessions: ConsoleSessions, directory: AppDirectory, reader: UserStateReader, metrics: MetricsReader, actions: UserActions,
        evidence: EvidenceStore, tokens: AppAccountTokens, lookups: AppleLookups, retention: RetentionDesk, throttle: FailureThrottle,
        audit: AuditLog, refusals: @escaping @Sendable () -> [(code: String, count: Int)]
    ) {
        self.sessions = sessions
        self.directory = directory
        self.reader = reader
        self.metrics = metrics
        self.actions = actions
        self.evidence = evidence
        self.tokens = tokens
        self.lookups = lookups
        self.retention = retention
        self.throttle = throttle
        self.audit = audit
        self.refusals = refusals
    }
}
