import Foundation

/// The machine's PostgreSQL server programs (`initdb`, `pg_ctl`), found without configuration.
package struct PostgresBinaries: Sendable {
    package let directory: URL

    package var initdb: URL { directory.appendingPathComponent("initdb") }
    package var pgCtl: URL { directory.appendingPathComponent("pg_ctl") }
    package var pgBasebackup: URL { directory.appendingPathComponent("pg_basebackup") }

    /// `configured` (`LEDGER_POSTGRES_BIN`, read by the `ledger` command) if given; else Debian's
    /// `/usr/lib/postgresql/<newest>/bin`; else `initdb` on `PATH`.
    package static func locate(configured: String? = nil) throws -> PostgresBinaries {
        let fileManager = FileManager.default
        func usable(_ path: String) -> Bool {
            fileManager.isExecutableFile(atPath: path + "/initdb") && fileManager.isExecutableFile(atPath: path + "/pg_ctl")
        }

        if let configured, !configured.isEmpty {
            guard usable(configured) else {
                throw EmbeddedPostgresError.binariesNotFound("LEDGER_POSTGRES_BIN=\(configured) has no initdb and pg_ctl")
            }
            return PostgresBinaries(directory: URL(fileURLWithPath: configured))
        }
        let debian = "/usr/lib/postgresql"
        let versions = ((try? fileManager.contentsOfDirectory(atPath: debian)) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions where usable("\(debian)/\(version)/bin") {
            return PostgresBinaries(directory: URL(fileURLWithPath: "\(debian)/\(version)/bin"))
        }
        let searchPath = getenv("PATH").map { String(cString: $0) } ?? ""
        for path in searchPath.split(separator: ":").map(String.init) where usable(path) {
            return PostgresBinaries(directory: URL(fileURLWithPath: path))
        }
        throw EmbeddedPostgresError.binariesNotFound(
            "no PostgreSQL server binaries found: install them (apt-get install -y postgresql) or set LEDGER_POSTGRES_BIN")
    }
}

package enum EmbeddedPostgresError: Error, CustomStringConvertible {
    case binariesNotFound(String)
    case commandFailed(command: String, status: Int32, output: String)
    case notAccessible(String)

    package var description: String {
        switch self {
        case .binariesNotFound(let message): message
        case .commandFailed(let command, let status, let output):
            "\(command) exited with status \(status):\n\(output.suffix(2000))"
        case .notAccessible(let message): message
        }
    }
}
