import LedgerPostgres

/// What the role a connection runs as may do to the log, for `ledger doctor`: a server must be
/// able to append and must not be able to rewrite (docs/event-store.md, "Immutability").
package struct LogPrivileges: Sendable {
    /// The role the connection runs as (after `SET ROLE`).
    package var role: String
    package var mayAppend: Bool
    package var mayRewrite: Bool
    /// Whether the login itself is a superuser (it could rewrite whatever its role may not).
    package var loginIsSuperuser: Bool

    package static func of(_ connection: PostgresConnection) throws -> LogPrivileges {
        let row = try connection.query(
            """
            SELECT current_user AS role, has_table_privilege('ledger.events', 'INSERT') AS appends,
                   has_table_privilege('ledger.events', 'UPDATE') OR has_table_privilege('ledger.events', 'DELETE') AS rewrites,
                   (SELECT rolsuper FROM pg_roles WHERE rolname = session_user) AS superuser
            """)[0]
        return LogPrivileges(
            role: try row["role"].string(), mayAppend: try row["appends"].bool(), mayRewrite: try row["rewrites"].bool(),
            loginIsSuperuser: try row["superuser"].bool())
    }
}
