import Foundation

/// The role the server narrows to after connecting (`SET ROLE`), `ledger_app` unless configured:
/// it may read and append events, never rewrite them (schema/0001 grants it exactly that).
///
/// Roles belong to the whole PostgreSQL cluster, and on the PostgreSQL an operator is handed —
/// RDS, Cloud SQL, a DBA's — the login that owns the database may not be allowed to create them.
/// So the role is not created by a migration: `prepare` creates it only when the login may
/// (superuser, or `CREATEROLE` as RDS and Cloud SQL give their main user) and otherwise finds the
/// one a DBA made; `check` is what every other command does. When neither works, the error says
/// what is missing and gives the exact SQL for the DBA.
package struct ApplicationRole: Sendable, Equatable, CustomStringConvertible {
    package static let defaultName = "ledger_app"
    package let name: String

    /// Plain lower-case identifiers only: the name is written into migrations' GRANTs and into
    /// the SQL shown to a DBA, so it must need no quoting.
    package init(_ name: String = ApplicationRole.defaultName) throws {
        let valid =
            (1...63).contains(name.utf8.count)
            && name.utf8.first.map { $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) } == true
            && name.utf8.allSatisfy {
                $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            }
        guard valid else { throw ApplicationRoleError.invalidName(name) }
        self.name = name
    }

    package var description: String { name }

    /// What the connected login has to do with the role.
    struct Standing {
        var login: String
        var exists: Bool
        var isMember: Bool
        var mayCreateRoles: Bool
    }

    func standing(on connection: PostgresConnection) throws -> Standing {
        let row = try connection.query(
            """
            SELECT current_user AS login,
                   EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS present,
                   (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) AS creates,
                   CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) THEN pg_has_role(current_user, $1, 'MEMBER') ELSE false END AS member
            """, [name])[0]
        return Standing(
            login: try row["login"].string(), exists: try row["present"].bool(), isMember: try row["member"].bool(),
            mayCreateRoles: try row["creates"].bool())
    }

    /// Makes the role usable by the connected login: creates it and joins it when allowed, or
    /// throws what a DBA must run. Idempotent; safe with several migrators at once.
    package func prepare(on connection: PostgresConnection) throws {
        try whilePostgres("preparing the application role \(name)") {
            var standing = try standing(on: connection)
            if !standing.exists {
                guard standing.mayCreateRoles else { throw ApplicationRoleError.missing(role: name, login: standing.login) }
                do {
                    try connection.execute(script: "CREATE ROLE \(name) NOLOGIN")
                } catch let error as PostgresError where error.sqlState == "42710" {
                    // duplicate_object: another migrator (or database in this cluster) made it first.
                }
                standing = try self.standing(on: connection)
            }
            if !standing.isMember {
                guard standing.mayCreateRoles else { throw ApplicationRoleError.notMember(role: name, login: standing.login) }
                try connection.execute(script: "GRANT \(name) TO \(Self.quoted(standing.login))")
            }
        }
    }

    /// Throws unless the role exists and the connected login may `SET ROLE` to it.
    package func check(on connection: PostgresConnection) throws {
        try whilePostgres("checking the application role \(name)") {
            let standing = try standing(on: connection)
            guard standing.exists else { throw ApplicationRoleError.missing(role: name, login: standing.login) }
            guard standing.isMember else { throw ApplicationRoleError.notMember(role: name, login: standing.login) }
        }
    }

    /// A login name as an SQL identifier (logins are the DBA's choice: `app-user`, `Ledger`).
    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Migration text with this role in place of `ledger_app`, the name the files are written with.
    package func substitute(into sql: String) -> String {
        guard name != Self.defaultName else { return sql }
        var result = ""
        var rest = Substring(sql)
        while let found = rest.range(of: Self.defaultName) {
            let before = rest[..<found.lowerBound].last, after = rest[found.upperBound...].first
            let isWord = !(before.map(Self.isIdentifierCharacter) ?? false) && !(after.map(Self.isIdentifierCharacter) ?? false)
            result += rest[..<found.lowerBound] + (isWord ? name : Self.defaultName)
            rest = rest[found.upperBound...]
        }
        return result + rest
    }

    private static func isIdentifierCharacter(_ character: Character) -> Bool {
        character == "_" || character == "$" || character.isLetter || character.isNumber
    }
}

/// Why the application role cannot be used, with what to do about it.
package enum ApplicationRoleError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidName(String)
    case missing(role: String, login: String)
    case notMember(role: String, login: String)

    package var description: String {
        switch self {
        case .invalidName(let name):
            return "the database role \"\(name)\" is not a plain lower-case identifier (letters, digits, _; at most 63 bytes)"
        case .missing(let role, let login):
            return """
                the application role \(role) does not exist, and login \(login) may not create roles (it has neither SUPERUSER nor CREATEROLE).
                Ask a DBA to run, once:
                    CREATE ROLE \(role) NOLOGIN;
                    GRANT \(role) TO \(ApplicationRole.quoted(login));
                or give --database-role (LEDGER_DATABASE_ROLE) a role that \(login) is already a member of. See docs/deployment.md.
                """
        case .notMember(let role, let login):
            return """
                login \(login) is not a member of the application role \(role), so it cannot SET ROLE \(role).
                Ask a DBA to run, once:
                    GRANT \(role) TO \(ApplicationRole.quoted(login));
                or give --database-role (LEDGER_DATABASE_ROLE) a role that \(login) is a member of. See docs/deployment.md.
                """
        }
    }
}
