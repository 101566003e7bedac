import Crypto
import Foundation
import LedgerAccess
import LedgerCore
import LedgerPostgres

/// Who is signed in to the console: an API key exchanged for a session. The cookie holds a random
/// token; the database only its SHA-256. Idle sessions end after `idle` (8 hours), and a session
/// dies with its key.
package struct ConsoleSessions: Sendable {
    let pool: PostgresPool
    let keys: APIKeyStore
    let idle: Duration

    package init(pool: PostgresPool, keys: APIKeyStore, idle: Duration = .seconds(8 * 3600)) {
        self.pool = pool
        self.keys = keys
        self.idle = idle
    }

    package struct Session: Sendable {
        package var keyName: String
        package var scopes: Set<Scope>
        /// Nil: every app.
        package var bundleID: String?
        package var csrf: String

        package func may(_ scope: Scope) -> Bool { scopes.contains(scope) || scopes.contains(.admin) }
        package func covers(_ bundleID: String) -> Bool { self.bundleID == nil || self.bundleID == bundleID }
    }

    /// A new session for a key that may read (nil: not a key, revoked, or without `read`), and the
    /// token for the cookie.
    package func signIn(with secret: String) async throws -> (token: String, session: Session)? {
        guard let key = try await keys.authenticate(secret), key.grants(.read) else { return nil }
        let token = Self.random(), csrf = Self.random()
        try await pool.query(
            "INSERT INTO ledger.console_sessions (token_hash, key_id, csrf) VALUES ($1, $2, $3)",
            [PostgresBytes(Self.hash(token)), key.id, csrf])
        return (token, Session(keyName: key.name, scopes: key.scopes, bundleID: key.bundleID, csrf: csrf))
    }

    /// The session of a cookie's token, if it is alive (and now seen).
    package func session(_ token: String) async throws -> Session? {
        guard token.utf8.count == 64 else { return nil }
        let rows = try await pool.query(
            """
            UPDATE ledger.console_sessions s SET last_seen_at = now() FROM \(APIKeyStore.liveKeysRelation) k
             WHERE s.token_hash = $1 AND k.id = s.key_id
               AND s.last_seen_at > now() - $2 * interval '1 millisecond'
            RETURNING s.csrf, k.name, k.scopes::text AS scopes, k.bundle_id
            """, [PostgresBytes(Self.hash(token)), idle.milliseconds])
        guard let row = rows.first else { return nil }
        let scopes = try row["scopes"].string().trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",")
            .compactMap { Scope(rawValue: String($0)) }
        return Session(
            keyName: try row["name"].string(), scopes: Set(scopes), bundleID: row["bundle_id"].optionalString(),
            csrf: try row["csrf"].string())
    }

    package func signOut(_ token: String) async throws {
        try await pool.query("DELETE FROM ledger.console_sessions WHERE token_hash = $1", [PostgresBytes(Self.hash(token))])
    }

    static func random() -> String {
        Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
    }

    static func hash(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Data(token.utf8))) }
}
