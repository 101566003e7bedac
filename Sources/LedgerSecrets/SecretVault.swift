import LedgerCore
import LedgerPostgres

/// Keeps the database's secrets sealed under the keys the operator holds.
///
/// `ledger.secrets_keys` lists the keys the database's secrets are sealed under, each with a
/// proof: a known text sealed under that key. A server whose keys are not listed is refused at
/// start-up, in a sentence naming the setting, instead of failing on the first secret it needs.
/// The first server on a new database lists its key.
package struct SecretVault: Sendable {
    package let keyring: Keyring

    package init(keyring: Keyring) {
        self.keyring = keyring
    }

    /// What a pass changed.
    package struct Report: Sendable, Equatable {
        /// Values found in clear and sealed.
        package var sealed = 0
        /// Sealed values sealed again (a rotation).
        package var resealed = 0
        /// Keys listed by this pass, and keys dropped from the list.
        package var listed: [String] = []
        package var dropped: [String] = []

        package init() {}
    }

    /// Start-up: checks that this process holds a key the database knows, lists the others it
    /// holds, and seals any value still in clear (written before sealing existed, or by an older
    /// server during an upgrade).
    package func prepare(_ connection: PostgresConnection) throws -> Report {
        var report = try admit(connection)
        report.sealed = try reseal(connection, only: { !Keyring.isSealed($0) }, with: keyring)
        return report
    }

    /// The first half of a rotation (the keyring holds the current key and the new one): every
    /// value sealed under both, so servers holding either key open it.
    package func rotate(_ connection: PostgresConnection) throws -> Report {
        var report = try admit(connection)
        report.resealed = try reseal(connection, only: { _ in true }, with: keyring)
        return report
    }

    /// The end of a rotation: every value sealed under the first key alone, the others dropped
    /// from the list. Refused, changing nothing, while a value has no envelope this keyring opens.
    package func finish(_ connection: PostgresConnection) throws -> Report {
        var report = try admit(connection)
        var unopened: [String] = []
        for column in StoredSecrets.columns {
            for row in try connection.query(column.rowsSQL) {
                let binding = column.binding(try row["bundle_id"].string(), try row["part"].string())
                do { _ = try keyring.open(try row["value"].string(), for: binding) } catch { unopened.append("\(binding)") }
            }
        }
        guard unopened.isEmpty else { throw SecretVaultError.unopened(unopened) }
        let kept = Keyring([keyring.keys[0]])
        report.resealed = try reseal(connection, only: { Keyring.keyIDs(of: $0) != kept.ids }, with: kept)
        report.dropped = try connection.query(
            "DELETE FROM ledger.secrets_keys WHERE key_id <> $1 RETURNING key_id", [kept.ids[0]]
        ).map { try $0["key_id"].string() }.sorted()
        return report
    }

    /// What `ledger doctor` asks, changing nothing: whether the keyring holds a key the database
    /// lists (nil when none is listed yet: the first server lists its own), and which stored
    /// secrets it cannot open.
    package func check(_ connection: PostgresConnection) throws -> (listed: [String]?, unopened: [String]) {
        let listed = try listedKeys(connection)
        var unopened: [String] = []
        for column in StoredSecrets.columns {
            for row in try connection.query(column.rowsSQL) {
                let binding = column.binding(try row["bundle_id"].string(), try row["part"].string())
                let stored = try row["value"].string()
                if Keyring.isSealed(stored), (try? keyring.open(stored, for: binding)) == nil { unopened.append("\(binding)") }
            }
        }
        return (listed.isEmpty ? nil : listed.map(\.id), unopened)
    }

    /// The keys the database lists, refused unless the keyring holds one of them and opens the
    /// proof of every one it holds: what start-up and `ledger doctor` both check.
    private func listedKeys(_ connection: PostgresConnection) throws -> [(id: String, proof: String)] {
        let listed = try connection.query("SELECT key_id, proof FROM ledger.secrets_keys ORDER BY added_at, key_id")
            .map { (id: try $0["key_id"].string(), proof: try $0["proof"].string()) }
        guard !listed.isEmpty else { return listed }
        let held = listed.filter { keyring.ids.contains($0.id) }
        guard !held.isEmpty, held.allSatisfy({ (try? keyring.open($0.proof, for: Self.proofBinding($0.id))) == Self.proofText }) else {
            throw SecretVaultError.wrongKey(listed: listed.map(\.id), held: keyring.ids)
        }
        return listed
    }

    /// Checks the keyring against the listed keys (listing them if none are) and lists the
    /// keyring's other keys. One server at a time, so two first servers cannot list two keys.
    private func admit(_ connection: PostgresConnection) throws -> Report {
        try connection.transaction { connection in
            _ = try connection.query("SELECT pg_advisory_xact_lock(hashtext('ledger.secrets_keys'))")
            let listed = try listedKeys(connection)
            var report = Report()
            for key in keyring.keys where !listed.contains(where: { $0.id == key.id }) {
                let proof = Keyring.envelope(Self.proofText, key: key, binding: Self.proofBinding(key.id))
                try connection.query("INSERT INTO ledger.secrets_keys (key_id, proof) VALUES ($1, $2)", [key.id, proof])
                report.listed.append(key.id)
            }
            return report
        }
    }

    /// Seals again, under `target`, each value `only` picks; a value changed meanwhile by a server
    /// is read again, so the pass never overwrites a newer secret.
    private func reseal(_ connection: PostgresConnection, only picks: (String) -> Bool, with target: Keyring) throws -> Int {
        var count = 0
        for column in StoredSecrets.columns {
            for row in try connection.query(column.rowsSQL) {
                let bundleID = try row["bundle_id"].string()
                let part = try row["part"].string()
                let binding = column.binding(bundleID, part)
                var stored = try row["value"].string()
                for _ in 0..<5 {
                    guard picks(stored) else { break }
                    let resealed = target.seal(try keyring.open(stored, for: binding), for: binding)
                    if try connection.query(column.updateSQL, [bundleID, part, stored, resealed]).affectedRows > 0 {
                        count += 1
                        break
                    }
                    let again = try connection.query(column.rowsSQL).first {
                        (try? $0["bundle_id"].string()) == bundleID && (try? $0["part"].string()) == part
                    }
                    guard let again else { break } // deleted meanwhile
                    stored = try again["value"].string()
                }
            }
        }
        return count
    }

    static let proofText = "ledger secrets key"

    static func proofBinding(_ keyID: String) -> SecretBinding {
        SecretBinding(table: "ledger.secrets_keys", bundleID: "", kind: keyID)
    }
}

/// Why the vault refused; each says what to set or run.
package enum SecretVaultError: Error, CustomStringConvertible {
    case wrongKey(listed: [String], held: [String])
    case unopened([String])

    package var description: String {
        switch self {
        case .wrongKey(let listed, let held):
            "LEDGER_SECRETS_KEY does not open this database's secrets: they are sealed under key \(listed.joined(separator: " and ")), "
                + "and the key given is \(held.joined(separator: " and ")). Set LEDGER_SECRETS_KEY (or LEDGER_SECRETS_KEY_FILE) to the key "
                + "this database was set up with; a new key is brought in with `ledger secrets rotate` (docs/deployment.md)."
        case .unopened(let bindings):
            "\(bindings.count) stored secret(s) have no envelope under the keys given, so the rotation cannot finish: "
                + bindings.joined(separator: ", ")
                + ". Run `ledger secrets rotate` again with LEDGER_SECRETS_KEY=<old key> and LEDGER_SECRETS_NEW_KEY=<new key>, then finish."
        }
    }
}
