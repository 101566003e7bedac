import CLibPQ
import Foundation

/// Where and how to connect. Wraps a libpq connection string (URL or `key=value` form) so the
/// operator can use every libpq option, while logs only ever see the redacted `description`.
package struct PostgresConfiguration: Sendable, CustomStringConvertible {
    /// The full connection string. Holds a password when one is configured: never log it.
    package var connectionString: String
    /// `application_name`, shown in `pg_stat_activity`.
    package var applicationName: String
    /// A role to `SET ROLE` to after connecting, so the server runs with the application role's
    /// narrower privileges even when the login role owns the schema (see schema/0001).
    package var role: String?
    /// Seconds libpq waits for a connection before giving up.
    package var connectTimeoutSeconds: Int
    /// How long one call (a statement, a pipeline) may wait for the server's answer before the
    /// connection is dropped and the call fails as `deadlineExceeded`; nil: as long as it takes.
    /// A serving process sets one, so no request hangs on a server that stopped answering; the
    /// maintenance commands (migrations, rebuilds, verification) run without.
    package var deadline: Duration?

    package init(
        connectionString: String, applicationName: String = "ledger", role: String? = nil, connectTimeoutSeconds: Int = 5,
        deadline: Duration? = nil
    ) {
        self.connectionString = connectionString
        self.applicationName = applicationName
        self.role = role
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.deadline = deadline
    }

    /// A unix-socket connection, as used for the embedded cluster.
    package static func unixSocket(directory: String, port: Int, database: String, user: String) -> PostgresConfiguration {
        PostgresConfiguration(connectionString: "host='\(directory)' port=\(port) dbname='\(database)' user='\(user)'")
    }

    /// The same server, another database.
    package func with(database: String) -> PostgresConfiguration {
        var copy = self
        copy.connectionString =
            connectionString.contains("://")
            ? Self.replacingURLDatabase(in: connectionString, with: database)
            : connectionString + " dbname='\(database)'"
        return copy
    }

    /// host, port and database only: safe for logs and error messages.
    package var description: String {
        let parts = Self.parse(connectionString)
        let host = parts["host"] ?? parts["hostaddr"] ?? "localhost"
        let port = parts["port"] ?? "5432"
        let database = parts["dbname"] ?? parts["user"] ?? "?"
        return "postgresql \(host):\(port)/\(database)"
    }

    /// libpq's own parser, so we read the string exactly as libpq will.
    package static func parse(_ connectionString: String) -> [String: String] {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            if let error { PQfreemem(error) }
            return [:]
        }
        defer { PQconninfoFree(options) }
        var result: [String: String] = [:]
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            if let value = cursor.pointee.val { result[String(cString: keyword)] = String(cString: value) }
            cursor += 1
        }
        return result
    }

    private static func replacingURLDatabase(in url: String, with database: String) -> String {
        // scheme://authority/database?query — keep everything but the path.
        guard let schemeEnd = url.range(of: "://") else { return url }
        let afterScheme = url[schemeEnd.upperBound...]
        let query = afterScheme.firstIndex(of: "?").map { String(afterScheme[$0...]) } ?? ""
        let authorityAndPath = afterScheme.prefix { $0 != "?" }
        let authority = authorityAndPath.prefix { $0 != "/" }
        return url[..<schemeEnd.upperBound] + authority + "/" + database + query
    }
}
