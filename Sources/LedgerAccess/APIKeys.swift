import Crypto
import Foundation
import LedgerCore
import LedgerFormats
import LedgerPostgres
import Synchronization

/// What an API key may do.
package enum Scope: String, Sendable, CaseIterable, Codable {
    case read, ingest, finance, admin
}

/// A key as stored: never the key itself, only its SHA-256 and first characters.
package struct APIKey: Sendable, Equatable {
    package var id: UUID
    package var name: String
    package var prefix: String
    package var scopes: Set<Scope>
    /// Nil: every app.
    package var bundleID: String?
    package var createdAt: Date
    package var revokedAt: Date?
    /// Requests per second the key may make; nil: no limit (`KeyRateLimiter`).
    package var rateLimit: Double? = nil

    package init(
        id: UUID, name: String, prefix: String, scopes: Set<Scope>, bundleID: String?, createdAt: Date, revokedAt: Date? = nil,
        rateLimit: Double? = nil
    ) {
        self.id = id
        self.name = name
        self.prefix = prefix
        self.scopes = scopes
        self.bundleID = bundleID
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.rateLimit = rateLimit
    }

    /// Admin implies every scope.
    package func grants(_ scope: Scope) -> Bool { scopes.contains(scope) || scopes.contains(.admin) }

    /// A key limited to one app sees only that app.
    package func covers(bundleID: String) -> Bool { self.bundleID == nil || self.bundleID == bundleID }
}

/// Creates, lists, revokes and recognises API keys (`ledger.api_keys`).
///
/// Recognising a key costs a hash and, at most once per `cacheTTL`, a query: the user-state route
/// is the hot path. A revoked key therefore stops working within `cacheTTL` in every server.
package final class APIKeyStore: Sendable {
    let pool: PostgresPool
    /// Keys are recognised on a replica when there is one (reads keep working while the primary
    /// is away); one not found there is asked of the primary (it may have been made a moment ago).
    let replicas: ReadReplicas?
    let cacheTTL: Duration
    private let cache = Mutex<[Data: (key: APIKey?, at: ContinuousClock.Instant)]>([:])
    /// Every live key by hash, read whole at most once per `ringTTL`: what a throttled address's
    /// key is checked against, so that guessing costs no lookup while a good key still works.
    private let ring = Mutex<(keys: [Data: APIKey], loadedAt: ContinuousClock.Instant?, loading: Bool)>(([:], nil, false))
    let ringTTL: Duration = .seconds(2)
    /// Keys looked up in the database, for tests and metrics.
    private let lookupCount = Atomic<Int>(0)
    package var lookups: Int { lookupCount.load(ordering: .relaxed) }

    package init(pool: PostgresPool, replicas: ReadReplicas? = nil, cacheTTL: Duration = .seconds(2)) {
        self.pool = pool
        self.replicas = replicas
        self.cacheTTL = cacheTTL
    }

    /// Makes a new key and returns it with the secret, which is shown once and never stored.
    package func create(
        name: String, scopes: Set<Scope>, bundleID: String?, rateLimit: Double? = nil
    ) async throws -> (key: APIKey, secret: String) {
        guard !name.isEmpty, !scopes.isEmpty else { throw LedgerError(.invalidRequest, "a key needs a name and at least one scope") }
        if let rateLimit, !(rateLimit > 0 && rateLimit.isFinite) {
            throw LedgerError(.invalidRequest, "a rate limit is a number of requests per second above 0")
        }
        var random = [UInt8](repeating: 0, count: 24)
        for index in random.indices { random[index] = UInt8.random(in: 0...255) }
        let secret = "lk_" + Hex.encode(random)
        let key = APIKey(
            id: UUID(), name: name, prefix: String(secret.prefix(10)), scopes: scopes, bundleID: bundleID, createdAt: Date(),
            rateLimit: rateLimit)
        try await pool.query(
            """
            INSERT INTO ledger.api_keys (id, name, prefix, key_hash, scopes, bundle_id, created_at, rate_limit) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [
                key.id, name, key.prefix, PostgresBytes(Self.hash(secret)), PostgresTextArray(scopes.map(\.rawValue).sorted()), bundleID,
                key.createdAt,
                rateLimit.map { String($0) },
            ])
        return (key, secret)
    }

    package func list() async throws -> [APIKey] {
        try await pool.query("SELECT \(Self.columns) FROM ledger.api_keys ORDER BY created_at, name").map(Self.key(from:))
    }

    /// Revokes by id or by name; returns how many keys it revoked.
    package func revoke(_ idOrName: String) async throws -> Int {
        let rows = try await pool.query(
            """
            UPDATE ledger.api_keys SET revoked_at = now()
             WHERE revoked_at IS NULL AND (id::text = $1 OR name = $1 OR prefix = $1) RETURNING id
            """, [idOrName])
        cache.withLock { $0.removeAll() }
        ring.withLock { $0.loadedAt = nil }
        return rows.count
    }

    /// The live key for a presented secret, or nil (unknown or revoked).
    package func authenticate(_ secret: String) async throws -> APIKey? {
        guard secret.hasPrefix("lk_"), secret.utf8.count < 200 else { return nil }
        let hash = Data(Self.hash(secret))
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0[hash] }), now - cached.at < cacheTTL { return cached.key }
        let key = try await find(hash: Array(hash))
        cache.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() } // bounded: unknown secrets are cached too
            cache[hash] = (key, now)
        }
        return key
    }

    /// The live key for a secret, from the ring of every live key (refreshed at most once per
    /// `ringTTL` for all callers together, never once per request): for addresses being throttled.
    package func authenticateWithoutLookup(_ secret: String) async throws -> APIKey? {
        guard secret.hasPrefix("lk_"), secret.utf8.count < 200 else { return nil }
        let now = ContinuousClock.now
        let refresh = ring.withLock { ring -> Bool in
            guard !ring.loading, ring.loadedAt.map({ now - $0 >= ringTTL }) ?? true else { return false }
            ring.loading = true
            return true
        }
        if refresh {
            do {
                let keys = try await pool.query("SELECT \(Self.columns), key_hash FROM ledger.api_keys WHERE revoked_at IS NULL")
                var byHash: [Data: APIKey] = [:]
                for row in keys { byHash[Data(try row["key_hash"].bytes())] = try Self.key(from: row) }
                ring.withLock { $0 = (byHash, now, false) }
            } catch {
                ring.withLock { $0.loading = false }
                throw error
            }
        }
        let hash = Data(Self.hash(secret))
        return ring.withLock { $0.keys[hash] }
    }

    private func find(hash: [UInt8]) async throws -> APIKey? {
        lookupCount.add(1, ordering: .relaxed)
        let sql = "SELECT \(Self.columns) FROM ledger.api_keys WHERE key_hash = $1 AND revoked_at IS NULL"
        if let replicas, !replicas.replicas.isEmpty,
            let key = try? await replicas.read(atLeast: .start, { try $0.query(sql, [PostgresBytes(hash)]).first.map(Self.key(from:)) })
        {
            return key
        }
        return try await pool.query(sql, [PostgresBytes(hash)]).first.map(Self.key(from:))
    }

    /// The live keys (not revoked) as a relation for another module's statement to join: `id`,
    /// `name`, `scopes` (a text array), `bundle_id`. The console checks a session's key with it in
    /// the same statement that marks the session seen, one round trip a page.
    package static let liveKeysRelation = "(SELECT id, name, scopes, bundle_id FROM ledger.api_keys WHERE revoked_at IS NULL)"

    static let columns =
        "id, name, prefix, array_to_string(scopes, ',') AS scopes, bundle_id, created_at, revoked_at, rate_limit::text AS rate_limit"

    static func key(from row: PostgresRow) throws -> APIKey {
        APIKey(
            id: try row["id"].uuid(), name: try row["name"].string(), prefix: try row["prefix"].string(),
            scopes: Set(try row["scopes"].string().split(separator: ",").compactMap { Scope(rawValue: String($0)) }),
            bundleID: row["bundle_id"].text, createdAt: try row["created_at"].date(),
            revokedAt: row["revoked_at"].text == nil ? nil : try row["revoked_at"].date(),
            rateLimit: row["rate_limit"].text.flatMap(Double.init))
    }

    static func hash(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Data(secret.utf8))) }
}
