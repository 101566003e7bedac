import LedgerCore

/// Every secret the ledger stores, in one list: the bindings the stores seal and open with, and
/// the columns the start-up pass and a key rotation walk. A secret added later is added here, and
/// a test checks that every secret-like column of the schema is on the list.
package enum StoredSecrets {
    /// An app's shared secret (legacy receipts, V1 notifications).
    package static func sharedSecret(of bundleID: String) -> SecretBinding {
        SecretBinding(table: "ledger.app_secrets", bundleID: bundleID, kind: "shared_secret")
    }

    /// An app's In-App Purchase private key (the App Store Server API).
    package static func serverAPIKey(of bundleID: String) -> SecretBinding {
        SecretBinding(table: "ledger.app_server_api_keys", bundleID: bundleID, kind: "private_key")
    }

    /// An app's Google service account key file (Google Play's Developer API).
    package static func googleServiceAccount(of bundleID: String) -> SecretBinding {
        SecretBinding(table: "ledger.app_google_service_accounts", bundleID: bundleID, kind: "private_key_file")
    }

    /// The secret that signs a webhook's deliveries.
    package static func webhookSecret(of bundleID: String, webhook name: String) -> SecretBinding {
        SecretBinding(table: "ledger.webhooks", bundleID: bundleID, kind: "secret of webhook \(name)")
    }

    /// A column holding sealed values: how to list its rows and how to replace one value.
    package struct Column: Sendable {
        package var table: String
        package var column: String
        /// Rows as `(bundle_id, part, value)`: `part` completes the binding (a webhook's name).
        var rowsSQL: String
        /// `$1` bundle id, `$2` part, `$3` the value read, `$4` the new one: replaces only a value
        /// nobody changed meanwhile.
        var updateSQL: String
        var binding: @Sendable (_ bundleID: String, _ part: String) -> SecretBinding
    }

    package static let columns: [Column] = [
        Column(
            table: "ledger.app_secrets", column: "shared_secret",
            rowsSQL: "SELECT bundle_id, '' AS part, shared_secret AS value FROM ledger.app_secrets ORDER BY bundle_id",
            updateSQL: "UPDATE ledger.app_secrets SET shared_secret = $4 WHERE bundle_id = $1 AND $2 = '' AND shared_secret = $3",
            binding: { bundleID, _ in sharedSecret(of: bundleID) }),
        Column(
            table: "ledger.app_server_api_keys", column: "private_key",
            rowsSQL: "SELECT bundle_id, '' AS part, private_key AS value FROM ledger.app_server_api_keys ORDER BY bundle_id",
            updateSQL: "UPDATE ledger.app_server_api_keys SET private_key = $4 WHERE bundle_id = $1 AND $2 = '' AND private_key = $3",
            binding: { bundleID, _ in serverAPIKey(of: bundleID) }),
        Column(
            table: "ledger.app_google_service_accounts", column: "private_key_file",
            rowsSQL:
                "SELECT bundle_id, '' AS part, private_key_file AS value FROM ledger.app_google_service_accounts ORDER BY bundle_id",
            updateSQL:
                "UPDATE ledger.app_google_service_accounts SET private_key_file = $4 WHERE bundle_id = $1 AND $2 = '' AND private_key_file = $3",
            binding: { bundleID, _ in googleServiceAccount(of: bundleID) }),
        Column(
            table: "ledger.webhooks", column: "secret",
            rowsSQL: "SELECT bundle_id, name AS part, secret AS value FROM ledger.webhooks ORDER BY bundle_id, name",
            updateSQL: "UPDATE ledger.webhooks SET secret = $4 WHERE bundle_id = $1 AND name = $2 AND secret = $3",
            binding: { bundleID, name in webhookSecret(of: bundleID, webhook: name) }),
    ]
}
