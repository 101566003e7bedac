import AsyncHTTPClient
import Foundation
import LedgerBackground
import LedgerChanges
import LedgerCore
import LedgerEventStore
import LedgerPostgres
import LedgerSecrets
import LedgerTracing
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Tracing

/// Delivers announced changes to webhooks: at least once, each user's in order (the next waits
/// for the previous one's 2xx), users independent of each other, retried with backoff, parked
/// after the retry window. Every bit of state is in `ledger.webhook_queue`: a restart or a
/// `kill -9` loses nothing, and servers share the work by leasing users' rows.
///
/// One loop: record what finished and lease more in one round trip, start those deliveries, then
/// sleep until a delivery finishes, a change is announced or a retry may have come due. Nothing
/// here is on ingestion's path: a receiver answering slowly holds up only its own user's next change.
package final class WebhookDispatcher: Sendable {
    let pool: PostgresPool
    let notifications: ChangeNotifications
    let policy: WebhookPolicy
    /// Opens the webhooks' secrets, stored sealed.
    let keyring: Keyring
    let logger: Logger
    /// Told of every round of recording and leasing, done or failed.
    package let heartbeat = Heartbeat("webhook deliveries")
    /// This process's leases.
    let server = UUID()
    /// What the rounds hand each other: see `Rounds`.
    let rounds = Mutex(Rounds())
    /// Raised by each delivery that finishes: the loop records it at once.
    let wake = Watermark<UInt64>(0)

    /// Told how each attempt went (`delivered`, `failed`, `refused`) and how long it took.
    let attempted: @Sendable (_ outcome: String, _ took: Duration) -> Void

    package init(
        pool: PostgresPool, notifications: ChangeNotifications, policy: WebhookPolicy = WebhookPolicy(), keyring: Keyring, logger: Logger,
        attempted: @escaping @Sendable (_ outcome: String, _ took: Duration) -> Void = { _, _ in }
    ) {
        self.attempted = attempted
        self.pool = pool
        self.notifications = notifications
        self.policy = policy
        self.keyring = keyring
        self.logger = logger
    }

    /// One user's next change, leased for delivery.
    struct Lease: Sendable {
        var bundleID: String
        var webhook: String
        var userID: String
        var delivered: Int64
        var wanted: Int64
        var attempts: Int
        var firstFailedAt: Date?
        var url: String
        var secret: String
        /// Nil: nothing left that the webhook's types take.
        var change: (position: Int64, id: String, body: String, traceparent: String?)?
    }

    /// What came of a lease.
    struct Attempt: Sendable {
        var lease: Lease
        /// Nil: delivered (2xx), or nothing to deliver.
        var failure: String?
        /// The target is one webhooks are never sent to: parked at once, with the reason.
        var refused = false
    }

    // MARK: PostgreSQL

    /// Records finished attempts (releasing their leases), then leases up to `capacity` users with
    /// a change due — one round trip.
    func recordAndLease(_ attempts: [Attempt], capacity: Int) async throws -> [Lease] {
        let now = Date()
        var trip = RoundTrip()
        if !attempts.isEmpty { trip.add(record(attempts, now: now)) }
        let lease = capacity > 0 ? trip.add(leaseStatement(capacity)) : nil
        guard !trip.isEmpty else { return [] }
        let batch = trip
        let results = try await pool.withConnection { try $0.send(batch) }
        guard let lease else { return [] }
        return try results[lease].map { row in
            let position = row["position"].optionalString().flatMap { Int64($0) }
            return Lease(
                bundleID: try row["bundle_id"].string(), webhook: try row["webhook"].string(), userID: try row["user_id"].string(),
                delivered: try row["delivered"].int64(), wanted: try row["wanted"].int64(), attempts: try row["attempts"].int(),
                firstFailedAt: row["first_failed_at"].optionalString() == nil ? nil : try row["first_failed_at"].date(),
                url: try row["url"].string(), secret: try row["secret"].string(),
                change: try position.map { ($0, try row["id"].string(), try row["body"].string(), row["traceparent"].optionalString()) })
        }
    }

    private func leaseStatement(_ limit: Int) -> PipelinedStatement {
        PipelinedStatement(
            """
            WITH due AS (
                SELECT bundle_id, webhook, user_id FROM ledger.webhook_queue
                 WHERE wanted > delivered AND next_attempt_at <= now() AND (leased_until IS NULL OR leased_until < now())
                 ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED),
            leased AS (
                UPDATE ledger.webhook_queue q SET leased_by = $2, leased_until = now() + $3 * interval '1 millisecond'
                  FROM due WHERE q.bundle_id = due.bundle_id AND q.webhook = due.webhook AND q.user_id = due.user_id
                RETURNING q.bundle_id, q.webhook, q.user_id, q.delivered, q.wanted, q.attempts, q.first_failed_at)
            SELECT l.*, w.url, w.secret, c.position, c.id, c.body, c.traceparent
              FROM leased l JOIN ledger.webhooks w ON w.bundle_id = l.bundle_id AND w.name = l.webhook
              LEFT JOIN LATERAL (\(ChangeRelations.nextSQL(bundle: "l.bundle_id", user: "l.user_id", after: "l.delivered", types: "w.types"))) c
                ON true
            """, [limit, server, policy.lease.milliseconds])
    }

    /// Each attempt's outcome on its row — only if the row is still as leased (a replay meanwhile
    /// wins: its changes go again) — and every lease released; changes out of retries parked.
    private func record(_ attempts: [Attempt], now: Date) -> [PipelinedStatement] {
        var columns = (
            apps: [String](), hooks: [String](), users: [String](), expected: [String](), delivered: [String](),
            tries: [String](), firstFailed: [String?](), next: [String](), errors: [String?]()
        )
        var parked: [(Attempt, Int64)] = []
        for attempt in attempts {
            let lease = attempt.lease
            var delivered = lease.change?.position ?? lease.wanted, tries = 0
            var firstFailed: Date?, next = now, error: String?
            if let failure = attempt.failure, let position = lease.change?.position {
                let since = lease.firstFailedAt ?? now
                if attempt.refused || now.timeIntervalSince(since) >= policy.retryWindow.seconds {
                    parked.append((attempt, position))
                } else {
                    delivered = lease.delivered
                    tries = lease.attempts + 1
                    firstFailed = since
                    next = now + policy.delay(beforeRetry: tries - 1).seconds
                    error = failure
                }
            }
            columns.apps.append(lease.bundleID)
            columns.hooks.append(lease.webhook)
            columns.users.append(lease.userID)
            columns.expected.append(String(lease.delivered))
            columns.delivered.append(String(delivered))
            columns.tries.append(String(tries))
            columns.firstFailed.append(firstFailed.map(PostgresTimestamp.format))
            columns.next.append(PostgresTimestamp.format(next))
            columns.errors.append(error)
        }
        var statements = [
            PipelinedStatement(
                """
                UPDATE ledger.webhook_queue q
                   SET delivered = CASE WHEN q.delivered = r.expected THEN r.delivered ELSE q.delivered END,
                       attempts = CASE WHEN q.delivered = r.expected THEN r.attempts ELSE 0 END,
                       first_failed_at = CASE WHEN q.delivered = r.expected THEN r.first_failed_at END,
                       next_attempt_at = CASE WHEN q.delivered = r.expected THEN r.next_attempt_at ELSE now() END,
                       last_error = CASE WHEN q.delivered = r.expected THEN r.last_error END,
                       leased_by = NULL, leased_until = NULL
                  FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::int[], $7::timestamptz[], $8::timestamptz[], $9::text[])
                       AS r(bundle_id, webhook, user_id, expected, delivered, attempts, first_failed_at, next_attempt_at, last_error)
                 WHERE q.bundle_id = r.bundle_id AND q.webhook = r.webhook AND q.user_id = r.user_id AND q.leased_by = $10
                """,
                [
                    PostgresTextArray(columns.apps), PostgresTextArray(columns.hooks), PostgresTextArray(columns.users),
                    PostgresTextArray(columns.expected), PostgresTextArray(columns.delivered), PostgresTextArray(columns.tries),
                    PostgresNullableTextArray(columns.firstFailed), PostgresTextArray(columns.next),
                    PostgresNullableTextArray(columns.errors), server,
                ])
        ]
        if !parked.isEmpty {
            statements.append(
                PipelinedStatement(
                    """
                    INSERT INTO ledger.webhook_failures (bundle_id, webhook, position, change_id, user_id, attempts, last_error)
                    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::uuid[], $5::text[], $6::int[], $7::text[])
                    ON CONFLICT DO NOTHING
                    """,
                    [
                        PostgresTextArray(parked.map(\.0.lease.bundleID)), PostgresTextArray(parked.map(\.0.lease.webhook)),
                        PostgresTextArray(parked.map { String($0.1) }), PostgresTextArray(parked.map { $0.0.lease.change?.id ?? "" }),
                        PostgresTextArray(parked.map(\.0.lease.userID)), PostgresTextArray(parked.map { String($0.0.lease.attempts + 1) }),
                        PostgresNullableTextArray(parked.map(\.0.failure)),
                    ]))
            for (attempt, position) in parked {
                logger.warning(
                    attempt.refused ? "webhook change parked: its target is refused" : "webhook change parked after the retry window",
                    metadata: [
                        "app": "\(attempt.lease.bundleID)", "webhook": "\(attempt.lease.webhook)", "position": "\(position)",
                        "error": "\(attempt.failure ?? "")",
                    ])
            }
        }
        return statements
    }

    // MARK: HTTP

    /// One POST of the change, signed, to an address checked just before (`WebhookTargets`); its
    /// failure said without the URL (it may carry a token).
    func deliver(_ lease: Lease, with clients: PinnedClients) async -> Attempt {
        guard let change = lease.change else { return Attempt(lease: lease, failure: nil) }
        // The attempt continues the trace of the request that recorded the change, when it was traced.
        let context = change.traceparent.map { Spans.context(traceparent: $0) } ?? .topLevel
        let started = ContinuousClock.now
        let attempt = await withSpan("webhook delivery", context: context, ofKind: .producer) { span in
            if span.isRecording {
                span.attributes["ledger.webhook"] = lease.webhook
                span.attributes["ledger.change.id"] = change.id
                span.attributes["ledger.change.position"] = Int(change.position)
                span.attributes["ledger.webhook.attempt"] = lease.attempts + 1
            }
            let attempt = await attemptDelivery(lease, change: change, with: clients, trace: span.context)
            if let failure = attempt.failure, span.isRecording {
                span.setStatus(SpanStatus(code: .error, message: failure))
            }
            return attempt
        }
        attempted(attempt.failure == nil ? "delivered" : attempt.refused ? "refused" : "failed", ContinuousClock.now - started)
        return attempt
    }

    private func attemptDelivery(
        _ lease: Lease, change: (position: Int64, id: String, body: String, traceparent: String?), with clients: PinnedClients,
        trace: ServiceContext
    ) async -> Attempt {
        let secret: String
        do {
            secret = try keyring.open(lease.secret, for: StoredSecrets.webhookSecret(of: lease.bundleID, webhook: lease.webhook))
        } catch {
            // Retried, not refused: a server given the key (or a finished rotation) delivers it.
            return Attempt(lease: lease, failure: "could not sign: \(error.message)")
        }
        let http: HTTPClient
        switch await policy.targets.check(url: lease.url) {
        case .allowed(let host, let addresses):
            http = clients.client(for: host, at: addresses[0])
        case .refused(let reason):
            return Attempt(lease: lease, failure: "refused: \(reason)", refused: true)
        case .unresolved(let reason):
            return Attempt(lease: lease, failure: "could not deliver: \(reason)")
        }
        let body = Array(change.body.utf8)
        var request = HTTPClientRequest(url: lease.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "entitlement-ledger-webhooks")
        request.headers.add(name: WebhookSignature.idHeader, value: change.id)
        request.headers.add(
            name: WebhookSignature.header, value: WebhookSignature.sign(body, secret: secret, at: Int64(Date().timeIntervalSince1970)))
        for (name, value) in Spans.headers(for: trace) { request.headers.replaceOrAdd(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(request, timeout: .milliseconds(policy.attemptTimeout.milliseconds))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            guard (200..<300).contains(response.status.code) else {
                return Attempt(lease: lease, failure: "the receiver answered HTTP \(response.status.code)")
            }
            return Attempt(lease: lease, failure: nil)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return Attempt(lease: lease, failure: "no answer within \(Int(policy.attemptTimeout.seconds)) s")
        } catch {
            return Attempt(lease: lease, failure: "could not deliver: \(Self.describe(error))")
        }
    }

    /// Connection failures in a few words, never the URL.
    static func describe(_ error: any Error) -> String {
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout: return "connecting timed out"
            case .remoteConnectionClosed: return "the receiver closed the connection"
            default: return String(describing: client)
            }
        }
        let text = String(describing: error)
        return text.contains("connectionRefused") || text.contains("Connection refused") ? "connection refused" : text
    }
}
