import LedgerCore
import LedgerEventStore
import LedgerPostgres

/// The order in which writers of the active `users` projection recompute a user.
///
/// Two writers apply it: the live worker, batch by batch, and each ingestion group for its own
/// appends (`InlineProjection`). Both recompute a user from every fact the log holds, so the one
/// that reads last must also write last — otherwise a timeline read before another writer's
/// commit could overwrite that writer's newer one, and the worker never comes back to those
/// events (it leaves inline-applied transactions alone). So every writer takes an advisory lock
/// per user before reading, and a statement that starts after the lock sees every commit of the
/// writer that held it. A purchase's finance rows and metrics depend on its stream alone: its
/// stream lock (the one its appenders take) orders them.
///
/// Order, the same for everybody so nobody waits in a circle: the projection registry's row (FOR
/// SHARE; a rebuild's switch takes it FOR UPDATE, so a group that waits there must hold nothing
/// else yet), purchase streams, then the lock that stands for all users (shared, or exclusive for a
/// writer of very many users, whose per-user locks would overflow PostgreSQL's lock table), then
/// users by key. Nothing another writer may also write goes before them: the owners a batch
/// records are inserted after (`UsersProjection.changes`), or a group holding a purchase stream's
/// lock and the worker inserting that stream's owner waited for each other.
package enum ProjectionLocks {
    package enum Scope: Sendable {
        /// A version nobody else writes (a rebuild's).
        case none
        /// The caller holds its purchase streams' locks already (an ingestion group appending to them).
        case users
        /// The live worker.
        case usersAndPurchases
    }

    /// Two-key advisory locks (a key space of their own, apart from the streams' one-key locks).
    static let allUsers = "1400100, 0", userClass = 1_400_101
    /// Above this many users a writer takes the lock for all of them instead.
    static let mostUsers = 512

    static func statements(_ scope: Scope, users: [UserKey], purchaseStreams: [String]) -> [PipelinedStatement] {
        guard scope != .none else { return [] }
        var statements: [PipelinedStatement] = []
        if scope == .usersAndPurchases, !purchaseStreams.isEmpty { statements.append(EventStore.streamLocksStatement(purchaseStreams)) }
        if users.count > mostUsers {
            statements.append(PipelinedStatement("SELECT pg_advisory_xact_lock(\(allUsers))"))
        } else if !users.isEmpty {
            statements.append(PipelinedStatement("SELECT pg_advisory_xact_lock_shared(\(allUsers))"))
            statements.append(
                PipelinedStatement(
                    """
                    SELECT pg_advisory_xact_lock(\(userClass), k)
                      FROM (SELECT DISTINCT hashtext(b || chr(31) || u) AS k FROM unnest($1::text[], $2::text[]) AS t(b, u) ORDER BY 1) AS keys
                    """, [PostgresTextArray(users.map(\.bundleID)), PostgresTextArray(users.map(\.userID))]))
        }
        return statements
    }
}
