import Foundation
import LedgerChanges
import LedgerCore
import LedgerPostgres
import LedgerSecrets

/// A webhook as listed: never its secret.
package struct Webhook: Sendable, Equatable {
    package var name: String
    package var url: String
    /// Change types delivered; nil: all.
    package var types: [String]?
    package var startsAfter: Int64
    package var createdAt: Date
    package var updatedAt: Date
    /// Users with changes waiting, and the oldest failure still being retried (support's first question).
    package var backlog: Int
    package var failing: Int
}

/// A change that failed for the whole retry window and was set aside.
package struct ParkedChange: Sendable, Equatable {
    package var position: Int64
    package var changeID: String
    package var userID: String
    package var attempts: Int
    package var lastError: String?
    package var parkedAt: Date
}

/// Each app's webhooks and what they have set aside, in PostgreSQL.
package struct WebhookRegistry: Sendable {
    let pool: PostgresPool
    /// Where webhooks may point: checked before a definition is stored.
    let targets: WebhookTargets
    /// Seals each secret before it is stored.
    let keyring: Keyring

    package init(pool: PostgresPool, targets: WebhookTargets, keyring: Keyring) {
        self.pool = pool
        self.targets = targets
        self.keyring = keyring
    }

    /// Checks a definition before it is stored: an absolute http(s) URL, a secret long enough to
    /// sign with, known change types.
    package static func validate(name: String, url: String, secret: String, types: [String]?) throws(LedgerError) {
        guard name.range(of: "^[A-Za-z0-9._-]{1,64}$", options: .regularExpression) != nil else {
            throw LedgerError(.invalidWebhook, "name: 1 to 64 letters, digits, '.', '_' or '-'")
        }
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host?.isEmpty == false,
            url.utf8.count <= 2048
        else {
            throw LedgerError(.invalidWebhook, "url: an absolute http:// or https:// URL of at most 2048 characters")
        }
        guard (16...256).contains(secret.unicodeScalars.count) else {
            throw LedgerError(.invalidWebhook, "secret: 16 to 256 characters (32 random bytes, hex-encoded, is a good secret)")
        }
        let known = Set(Change.Kind.allCases.map(\.rawValue)).union(Change.renamed.keys)
        if let unknown = types?.first(where: { !known.contains($0) }) {
            throw LedgerError(.invalidWebhook, "types: unknown change type '\(unknown)'; known: \(known.sorted().joined(separator: ", "))")
        }
        if types?.isEmpty == true { throw LedgerError(.invalidWebhook, "types: omit it for every type, or name at least one") }
    }

    /// Creates or replaces a webhook (true: created). A new one delivers the changes announced
    /// from now on; a replaced one keeps its place. A renamed type is stored under both its names,
    /// so it matches changes stored under either.
    package func put(bundleID: String, name: String, url: String, secret: String, types: [String]?) async throws -> Bool {
        let types = types.map(Change.withOtherNames)
        // A host that does not resolve yet is accepted: every delivery checks it again.
        if case .refused(let reason) = await targets.check(url: url) { throw LedgerError(.invalidWebhook, "url: \(reason)") }
        let sealed = keyring.seal(secret, for: StoredSecrets.webhookSecret(of: bundleID, webhook: name))
        var trip = RoundTrip()
        // Under the change projection's lock: a batch committing meanwhile has either queued its
        // users for this webhook or numbered its changes after `starts_after`.
        trip.add([ChangeRelations.lock])
        let created = trip.add(
            PipelinedStatement(
                """
                INSERT INTO ledger.webhooks (bundle_id, name, url, secret, types, starts_after)
                VALUES ($1, $2, $3, $4, $5::text[], \(ChangeRelations.lastPositionSQL))
                ON CONFLICT (bundle_id, name) DO UPDATE SET url = EXCLUDED.url, secret = EXCLUDED.secret, types = EXCLUDED.types, updated_at = now()
                RETURNING (xmax = 0) AS created
                """, [bundleID, name, url, sealed, types.map(PostgresTextArray.init)]))
        let put = trip
        let results = try await pool.withConnection { connection in
            try connection.pipelinedTransaction { try $0.commit(with: put) }
        }
        return try results[created][0]["created"].bool()
    }

    package func list(bundleID: String) async throws -> [Webhook] {
        try await pool.query(
            """
            SELECT w.name, w.url, w.types::text AS types, w.starts_after, w.created_at, w.updated_at,
                   count(q.user_id) FILTER (WHERE q.wanted > q.delivered) AS backlog,
                   count(q.user_id) FILTER (WHERE q.attempts > 0) AS failing
              FROM ledger.webhooks w LEFT JOIN ledger.webhook_queue q ON q.bundle_id = w.bundle_id AND q.webhook = w.name
             WHERE w.bundle_id = $1 GROUP BY w.bundle_id, w.name ORDER BY w.name
            """, [bundleID]
        ).map { row in
            Webhook(
                name: try row["name"].string(), url: try row["url"].string(), types: row["types"].optionalString().map(Self.textArray),
                startsAfter: try row["starts_after"].int64(), createdAt: try row["created_at"].date(),
                updatedAt: try row["updated_at"].date(),
                backlog: try row["backlog"].int(), failing: try row["failing"].int())
        }
    }

    /// True if it existed. Its delivery state and parked changes go with it.
    package func delete(bundleID: String, name: String) async throws -> Bool {
        try await pool.query("DELETE FROM ledger.webhooks WHERE bundle_id = $1 AND name = $2 RETURNING name", [bundleID, name]).count > 0
    }

    /// Nil: no such webhook.
    package func failures(bundleID: String, name: String, limit: Int) async throws -> [ParkedChange]? {
        var trip = RoundTrip()
        let webhook = trip.add(PipelinedStatement("SELECT 1 FROM ledger.webhooks WHERE bundle_id = $1 AND name = $2", [bundleID, name]))
        let parked = trip.add(
            PipelinedStatement(
                """
                SELECT position, change_id::text AS change_id, user_id, attempts, last_error, parked_at FROM ledger.webhook_failures
                 WHERE bundle_id = $1 AND webhook = $2 ORDER BY position LIMIT $3
                """, [bundleID, name, limit]))
        let reads = trip
        let results = try await pool.withConnection { try $0.send(reads) }
        guard results[webhook].count > 0 else { return nil }
        return try results[parked].map { row in
            ParkedChange(
                position: try row["position"].int64(), changeID: try row["change_id"].string(), userID: try row["user_id"].string(),
                attempts: try row["attempts"].int(), lastError: row["last_error"].optionalString(), parkedAt: try row["parked_at"].date())
        }
    }

    /// Sends again every change of the app from `position` on (parked ones included), each user's
    /// in order, after what is in flight. Returns the users queued, or nil: no such webhook.
    /// (`$3::bigint` throughout: in `$3 - 1` PostgreSQL would otherwise type the parameter as an
    /// integer, and a position past 2³¹ would fail as out of range.)
    package func replay(bundleID: String, name: String, from position: Int64) async throws -> Int? {
        var trip = RoundTrip()
        let webhook = trip.add(
            PipelinedStatement("SELECT 1 FROM ledger.webhooks WHERE bundle_id = $1 AND name = $2 FOR UPDATE", [bundleID, name]))
        trip.add([
            PipelinedStatement(
                "DELETE FROM ledger.webhook_failures WHERE bundle_id = $1 AND webhook = $2 AND position >= $3", [bundleID, name, position])
        ])
        let queued = trip.add(
            PipelinedStatement(
                """
                INSERT INTO ledger.webhook_queue AS q (bundle_id, webhook, user_id, delivered, wanted)
                SELECT w.bundle_id, w.name, c.user_id, $3::bigint - 1, c.last
                  FROM ledger.webhooks w, LATERAL (\(ChangeRelations.usersSQL(bundle: "w.bundle_id", from: "$3::bigint"))) c
                 WHERE w.bundle_id = $1 AND w.name = $2
                ON CONFLICT (bundle_id, webhook, user_id) DO UPDATE
                   SET delivered = least(q.delivered, EXCLUDED.delivered), wanted = greatest(q.wanted, EXCLUDED.wanted),
                       attempts = 0, first_failed_at = NULL, next_attempt_at = now()
                RETURNING user_id
                """, [bundleID, name, position]))
        let replay = trip
        let results = try await pool.withConnection { connection in
            try connection.pipelinedTransaction { try $0.commit(with: replay) }
        }
        return results[webhook].count > 0 ? results[queued].count : nil
    }

    /// `{a,b}` as PostgreSQL prints a text[] of plain words (change types are).
    static func textArray(_ text: String) -> [String] {
        text.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",").map {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
    }
}

extension Webhook {
    /// The URL as answers and the audit log show it: each value of its query and any password
    /// replaced by `***`. A receiver that authenticates by a token in its URL would otherwise see
    /// that token repeated to every admin key and kept in the audit log for good; the names stay,
    /// so an operator still sees what the URL carries. Deliveries use the URL whole.
    package var shownURL: String { Self.shown(url) }

    package static func shown(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "***" }
        if parts.password != nil { parts.password = "***" }
        if let items = parts.queryItems {
            parts.queryItems = items.map { URLQueryItem(name: $0.name, value: $0.value == nil ? nil : "***") }
        }
        if parts.fragment != nil { parts.fragment = "***" }
        return parts.string ?? "***"
    }
}
