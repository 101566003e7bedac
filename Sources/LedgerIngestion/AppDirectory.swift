import AppStore
import AppStoreServerAPI
import Foundation
import GooglePlay
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerPostgres
import LedgerProjections
import LedgerSecrets
import Logging
import Synchronization

/// One app as configured: settings and catalogue from its `app:` stream (events), the shared
/// secret from `ledger.app_secrets`, the App Store Server API key from
/// `ledger.app_server_api_keys` and the Google service account from
/// `ledger.app_google_service_accounts` (never events: the log is forever), all stored sealed.
package struct AppConfiguration: Sendable {
    package var bundleID: String
    package var settings: AppSettings
    package var catalogue: Catalogue
    package var products: [ProductDefinition]
    /// Opened when read; a value that does not open fails only what needs it.
    var storedSharedSecret: Result<String, LedgerError>?
    var storedServerAPI: Result<ServerAPICredentials, LedgerError>?
    /// The In-App Purchase key's id (not a secret), when one is stored.
    package var serverAPIKeyID: String?
    var storedGoogleAccount: Result<GoogleServiceAccount, LedgerError>?
    /// The Google service account's email (not a secret), when one is stored.
    package var googleAccountEmail: String?
    /// The app stream's version, for optimistic concurrency on configuration changes.
    package var version: Int64

    /// The shared secret, if configured; `secret_unavailable` if this server cannot open it.
    package var sharedSecret: String? { get throws { try storedSharedSecret?.get() } }
    /// The In-App Purchase key for asking Apple, if configured.
    package var serverAPI: ServerAPICredentials? { get throws { try storedServerAPI?.get() } }
    /// The Google service account the ledger asks Google Play as, if configured.
    package var googleAccount: GoogleServiceAccount? { get throws { try storedGoogleAccount?.get() } }
    package var hasSharedSecret: Bool { storedSharedSecret != nil }
    package var hasServerAPI: Bool { storedServerAPI != nil }

    /// What signed evidence must be for this app.
    package var expectation: Expectation {
        Expectation(bundleID: bundleID, environments: Set(settings.environments), appAppleID: settings.appleAppID)
    }
}

/// Reads and changes app configuration. Changes are events on the app's stream, appended only
/// when they differ from what is in force, so repeating a PUT records nothing.
///
/// Every request needs its app, so answers are kept for `cacheTTL`: a change made through this
/// process is seen at once, one made through another server within `cacheTTL`.
package final class AppDirectory: Sendable {
    let pool: PostgresPool
    let store: EventStore
    let freshness: ProjectionFreshness
    let cacheTTL: Duration
    /// Where apps are read from while the primary is away, so reads keep their answers.
    let replicas: ReadReplicas?
    /// Seals the secrets before they are stored and opens them when read.
    let keyring: Keyring
    private let cache = Mutex<[String: (app: AppConfiguration?, at: ContinuousClock.Instant)]>([:])

    /// `pool`: the primary, where `ledger.apps` and the secrets are; `store`: the apps' streams.
    package init(
        pool: PostgresPool, store: EventStore, freshness: ProjectionFreshness, keyring: Keyring, cacheTTL: Duration = .seconds(1),
        replicas: ReadReplicas? = nil
    ) {
        self.pool = pool
        self.keyring = keyring
        self.store = store
        self.freshness = freshness
        self.cacheTTL = cacheTTL
        self.replicas = replicas
    }

    /// The app, or `unknown_app`.
    package func app(_ bundleID: String) async throws -> AppConfiguration {
        let now = ContinuousClock.now
        if let cached = cache.withLock({ $0[bundleID] }), now - cached.at < cacheTTL {
            guard let app = cached.app else { throw LedgerError.unknownApp(bundleID) }
            return app
        }
        let found: AppConfiguration?
        do {
            found = try await find(bundleID)
        } catch let error as PostgresError where error.isTransient && replicas?.replicas.isEmpty == false {
            // The primary is away: the app as a replica has it (configuration rarely changes).
            found = try await replicas!.read(atLeast: .start) { [keyring] connection in
                try Self.find(bundleID, on: connection, keyring: keyring)
            }
        }
        cache.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() } // unknown bundle ids are cached too: keep it bounded
            cache[bundleID] = (found, now)
        }
        guard let found else { throw LedgerError.unknownApp(bundleID) }
        return found
    }

    /// The app as stored now (no cache).
    package func find(_ bundleID: String) async throws -> AppConfiguration? {
        try await pool.withConnection { [keyring] connection in try Self.find(bundleID, on: connection, keyring: keyring) }
    }

    static func find(_ bundleID: String, on connection: PostgresConnection, keyring: Keyring) throws -> AppConfiguration? {
        let recorded = try connection.query(
            EventStore.selectEventsSQL + " WHERE e.stream = $1 ORDER BY e.version", [LedgerStream.app(bundleID)]
        )
        .map(RecordedEvent.init(row:))
        guard !recorded.isEmpty else { return nil }
        var ledger = AppLedger(bundleID: bundleID)
        var products: [Catalogue.Key: ProductDefinition] = [:]
        for event in recorded {
            guard let (_, fact) = try StoredFacts.fact(from: event) else { continue }
            ledger.apply(fact)
            if case .productConfigured(let definition) = fact.event { products[definition.key] = definition }
        }
        let secret = try connection.query("SELECT shared_secret FROM ledger.app_secrets WHERE bundle_id = $1", [bundleID]).first.map {
            row in
            let sealed = try row["shared_secret"].string()
            return Result { () throws(LedgerError) in try keyring.open(sealed, for: StoredSecrets.sharedSecret(of: bundleID)) }
        }
        let keyRow = try connection.query(
            "SELECT issuer_id, key_id, private_key FROM ledger.app_server_api_keys WHERE bundle_id = $1", [bundleID]
        ).first
        let key = try keyRow.map { row in
            let (issuerID, keyID) = (try row["issuer_id"].string(), try row["key_id"].string())
            let sealed = try row["private_key"].string()
            return Result { () throws(LedgerError) in
                let pem = try keyring.open(sealed, for: StoredSecrets.serverAPIKey(of: bundleID))
                // Checked when configured; a key that no longer parses is reported when it is used.
                guard let credentials = try? ServerAPICredentials(issuerID: issuerID, keyID: keyID, privateKeyPEM: pem, bundleID: bundleID)
                else {
                    throw LedgerError(
                        .appleAPINotConfigured,
                        "\(bundleID)'s stored App Store Server API key no longer parses; configure app_store_server_api again")
                }
                return credentials
            }
        }
        let googleRow = try connection.query(
            "SELECT client_email, private_key_file FROM ledger.app_google_service_accounts WHERE bundle_id = $1", [bundleID]
        ).first
        let google = try googleRow.map { row in
            let sealed = try row["private_key_file"].string()
            return Result { () throws(LedgerError) in
                let file = try keyring.open(sealed, for: StoredSecrets.googleServiceAccount(of: bundleID))
                return try GoogleServiceAccount(keyFile: Data(file.utf8))
            }
        }
        return AppConfiguration(
            bundleID: bundleID, settings: ledger.settings(at: .distantFuture), catalogue: ledger.catalogue(),
            products: products.sorted { $0.key < $1.key }.map(\.value),
            storedSharedSecret: secret, storedServerAPI: key, serverAPIKeyID: try keyRow?["key_id"].string(),
            storedGoogleAccount: google, googleAccountEmail: try googleRow?["client_email"].string(),
            version: recorded.last?.version ?? 0)
    }

    /// Every app that was ever configured, by bundle id.
    package func bundleIDs() async throws -> [String] {
        try await store.streamNames(like: LedgerStream.appStreamsPattern).compactMap(LedgerStream.bundleID(of:))
    }

    /// The apps that have an App Store Server API key: those the reconciler asks Apple about.
    package func appsWithServerAPIKeys() async throws -> [String] {
        try await pool.query("SELECT bundle_id FROM ledger.app_server_api_keys ORDER BY bundle_id").map { try $0["bundle_id"].string() }
    }

    /// The apps with a Google Play service account: those the refund poll asks Google about.
    package func appsWithGoogleAccounts() async throws -> [String] {
        try await pool.query("SELECT bundle_id FROM ledger.app_google_service_accounts ORDER BY bundle_id").map {
            try $0["bundle_id"].string()
        }
    }

    /// Creates or changes an app. The secret, the App Store Server API key and the Google service
    /// account's key file, when given, replace the stored ones.
    package func configure(
        _ bundleID: String, settings: AppSettings, sharedSecret: String?,
        serverAPI: ServerAPICredentials? = nil, googleAccount: (email: String, keyFile: String)? = nil
    ) async throws -> AppConfiguration {
        try Self.validate(bundleID: bundleID)
        if let googleAccount {
            try await pool.query(
                """
                INSERT INTO ledger.app_google_service_accounts (bundle_id, client_email, private_key_file) VALUES ($1, $2, $3)
                ON CONFLICT (bundle_id) DO UPDATE SET client_email = EXCLUDED.client_email,
                    private_key_file = EXCLUDED.private_key_file, updated_at = now()
                """,
                [
                    bundleID, googleAccount.email,
                    keyring.seal(googleAccount.keyFile, for: StoredSecrets.googleServiceAccount(of: bundleID)),
                ])
        }
        if let serverAPI {
            try await pool.query(
                """
                INSERT INTO ledger.app_server_api_keys (bundle_id, issuer_id, key_id, private_key) VALUES ($1, $2, $3, $4)
                ON CONFLICT (bundle_id) DO UPDATE SET issuer_id = EXCLUDED.issuer_id, key_id = EXCLUDED.key_id,
                    private_key = EXCLUDED.private_key, updated_at = now()
                """,
                [
                    bundleID, serverAPI.issuerID, serverAPI.keyID,
                    keyring.seal(serverAPI.privateKeyPEM, for: StoredSecrets.serverAPIKey(of: bundleID)),
                ])
        }
        if let sharedSecret {
            try await pool.query(
                """
                INSERT INTO ledger.app_secrets (bundle_id, shared_secret) VALUES ($1, $2)
                ON CONFLICT (bundle_id) DO UPDATE SET shared_secret = EXCLUDED.shared_secret, updated_at = now()
                """, [bundleID, keyring.seal(sharedSecret, for: StoredSecrets.sharedSecret(of: bundleID))])
        }
        let current = try await find(bundleID)
        if current == nil || current?.settings != settings {
            try await append(.appConfigured(settings), bundleID: bundleID, after: current?.version ?? 0)
        }
        return try await fresh(bundleID)
    }

    /// Defines or changes a product of a configured app, effective now.
    package func define(_ definition: ProductDefinition, in bundleID: String) async throws -> AppConfiguration {
        guard let app = try await find(bundleID) else { throw LedgerError.unknownApp(bundleID) }
        if !app.products.contains(definition) {
            try await append(.productConfigured(definition), bundleID: bundleID, after: app.version)
        }
        return try await fresh(bundleID)
    }

    /// Sets up or changes a currency of a configured app, effective now: grants made from now on
    /// expire by the new policy, earlier ones as they were set up.
    package func define(_ currency: CurrencyDefinition, in bundleID: String) async throws -> AppConfiguration {
        guard let app = try await find(bundleID) else { throw LedgerError.unknownApp(bundleID) }
        if !app.catalogue.currentCurrencies.contains(currency) {
            try await append(.currencyConfigured(currency), bundleID: bundleID, after: app.version)
        }
        return try await fresh(bundleID)
    }

    /// Reads the app again and replaces the cached copy.
    private func fresh(_ bundleID: String) async throws -> AppConfiguration {
        cache.withLock { _ = $0.removeValue(forKey: bundleID) }
        return try await app(bundleID)
    }

    private func append(_ event: LedgerEvent, bundleID: String, after version: Int64) async throws {
        let (stream, new) = try StoredFacts.newEvent(event, bundleID: bundleID, id: UUID(), occurredAt: Date())
        do {
            let result = try await store.append([new], to: stream, expectedVersion: version == 0 ? .noStream : .exact(version))
            // A catalogue change re-prices what users own: answer once the projection shows it.
            if let position = result.events.last?.position {
                try await freshness.wait(for: position, logger: Logger(label: "ledger.apps"))
            }
        } catch EventStoreError.wrongExpectedVersion {
            throw LedgerError(.concurrentChange, "the app's configuration changed meanwhile; read it and try again")
        }
    }

    /// Bundle ids are reverse-DNS names of ASCII letters, digits, '.', '-' (and '_', which older
    /// apps have); they are also part of stream names, so no colons. The API description states
    /// the same pattern.
    static func validate(bundleID: String) throws {
        let allowed = { (scalar: Unicode.Scalar) in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || ".-_".unicodeScalars.contains(scalar))
        }
        guard !bundleID.isEmpty, bundleID.unicodeScalars.count <= 155, bundleID.unicodeScalars.allSatisfy(allowed) else {
            throw LedgerError(.invalidBundleID, "a bundle id is 1–155 letters, digits, '.', '-' or '_'")
        }
    }
}
