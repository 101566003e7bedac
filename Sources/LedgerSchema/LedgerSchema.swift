import Foundation
import LedgerPostgres

/// The SQL migrations of the repository's top-level `schema/` folder, compiled into the binary's
/// resource bundle (through the `schema` link in this folder), so `ledger migrate` works without
/// the source tree beside it.
package enum LedgerSchema {
    package static func migrations() throws -> [Migration] {
        guard let folder = Bundle.module.resourceURL else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "the schema resource bundle is missing"])
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        return try files.compactMap { file in
            Migration(fileName: file, sql: try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8))
        }
    }
}
