import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import EmbeddedPostgres
import Foundation
import GooglePlay
import GooglePlaySimulator
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerProjections
import LedgerProofs
import LedgerSchema
import LedgerSecrets
import LedgerServer
import LedgerTestSupport
import LedgerWebhooks
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// The real server on a real PostgreSQL, with the App Store simulator standing in for Apple and
/// the Google Play simulator for Google: what every end-to-end test drives over HTTP.
final class TestServer: Sendable {
    /// Its own cluster: the projection's snapshot fence is cluster-wide, and the event-store tests
    /// hold transactions open on purpose.
    static let cluster = Task { try await TestCluster.privateCluster() }

    let baseURL: String
    let pool: PostgresPool
    let store: EventStore
    let configuration: PostgresConfiguration
    let apple: VerifyReceiptServer
    /// Apple's App Store Server API, on the same listener as verifyReceipt.
    let serverAPI: ServerAPISimulator
    /// The simulator's address: `…/production` and `…/sandbox` are the API's two base URLs.
    let appleBase: String
    let app: SimulatedApp
    let task: Task<Void, any Error>
    let group: ServiceGroup
    /// An admin key for every app.
    let adminKey: String
    let keys: APIKeyStore
    let services: LedgerServices
    /// Pools on the replicas reads are served from.
    let readPools: [PostgresPool]
    /// Google Play: its OAuth endpoint, androidpublisher v3 and Pub/Sub's signing keys.
    let google: SimulatedGooglePlay

    static let authority = try! TestCertificateAuthority()
    /// The key every test server seals secrets under (servers sharing a database share it).
    static let keyring = Keyring.ephemeral()
    static let bundleID = "com.example.game"
    /// The app's In-App Purchase key, as App Store Connect would hand it out.
    static let apiKey = P256.Signing.PrivateKey()
    static let issuerID = "6a1e9c6e-0f3b-4a57-9b55-2f4f0a7c1d11"
    static let keyID = "SIMKEY01"
    /// The app's package on Google Play, and the service account the ledger asks Google as (RSA
    /// keys take a while to make: one for every test server).
    static let packageName = "com.example.game.android"
    static let googleAccount = try! SimulatedServiceAccount()
    static let googlePusher = try! PubSubPusher()
    /// Webhook deliveries paced for tests: retries within half a second, a 2 s timeout; the
    /// receivers listen on loopback, so private networks are allowed.
    static let quickWebhooks: WebhookPolicy = {
        var policy = WebhookPolicy()
        policy.targets.allowPrivateNetworks = true
        policy.attemptTimeout = .seconds(2)
        policy.firstRetry = .milliseconds(50)
        policy.longestRetry = .milliseconds(500)
        policy.pollInterval = .milliseconds(100)
        return policy
    }()

    /// `sharing`: a second server on the first one's database (as a multi-server deployment);
    /// `projecting: false` runs it without a projection worker.
    /// `replicas`: clusters streaming from the database's cluster, to serve reads from;
    /// `reading`: read pools' configurations given as they are (a host list, say).
    /// `appleOf`: another (possibly stopped) server whose App Store simulator this one uses, so
    /// what Apple kept while that server was down is there to reconcile.
    /// Every test server signs digests of its log with this key.
    static let digestKey = try! DigestKey(pem: DigestKey.generate())

    static func start(
        poolSize: Int = 4, configure: Bool = true, cluster given: EmbeddedPostgres? = nil, sharing: TestServer? = nil,
        projecting: Bool = true, replicas: [EmbeddedPostgres] = [], replicaWait: Duration = .milliseconds(250),
        appleOf: TestServer? = nil, webhooks: WebhookPolicy = TestServer.quickWebhooks,
        connecting: (owner: PostgresConfiguration, application: PostgresConfiguration)? = nil, reading: [PostgresConfiguration] = [],
        limits: RequestLimits = RequestLimits()
    ) async throws -> TestServer {
        let owner: PostgresConfiguration
        if let connecting {
            owner = connecting.owner
        } else if let sharing {
            owner = sharing.configuration
        } else {
            let cluster = if let given { given } else { try await cluster.value }
            owner = try await TestCluster.database(on: cluster)
        }
        let migrator = try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger)
        try await offThePool { try migrator.migrate(PostgresConnection.connect(owner)) }
        let database = PostgresConfiguration.parse(owner.connectionString)["dbname"] ?? ""
        let readers = replicas.map { TestCluster.applicationRole($0.configuration(database: database)) } + reading
        let server = try await TestServer(
            owner: owner, application: connecting?.application ?? TestCluster.applicationRole(owner), migrator: migrator,
            poolSize: poolSize,
            projecting: projecting, replicas: readers, replicaWait: replicaWait, appleOf: appleOf, webhooks: webhooks, limits: limits)
        if configure { try await server.configureDefaultApp() }
        return server
    }

    private init(
        owner: PostgresConfiguration, application: PostgresConfiguration, migrator: Migrator, poolSize: Int, projecting: Bool,
        replicas: [PostgresConfiguration], replicaWait: Duration, appleOf: TestServer?, webhooks: WebhookPolicy, limits: RequestLimits
    ) async throws {
        let logger = TestCluster.quietLogger
        configuration = owner
        pool = PostgresPool(configuration: application, size: poolSize, logger: logger)
        // As `ledger serve` starts: the secrets key checked against the database (and listed on a new one).
        _ = try await offThePool { try SecretVault(keyring: Self.keyring).prepare(PostgresConnection.connect(application)) }
        store = EventStore(pool: pool, logger: logger)
        let serverAPI = appleOf?.serverAPI ?? ServerAPISimulator()
        self.serverAPI = serverAPI
        if let appleOf {
            apple = appleOf.apple
            appleBase = appleOf.appleBase
        } else {
            apple = VerifyReceiptServer()
            let urls = try await apple.start { serverAPI.register(on: $0) }
            appleBase = String(urls.production.dropLast("/production/verifyReceipt".count))
        }
        let urls = (production: appleBase + "/production/verifyReceipt", sandbox: appleBase + "/sandbox/verifyReceipt")
        app = SimulatedApp(authority: Self.authority, bundleID: Self.bundleID, appAppleID: 4242, environment: "Sandbox")
        let receipts = VerifyReceiptConfiguration(
            productionURL: urls.production, sandboxURL: urls.sandbox,
            patience: Patience(
                maxAttempts: 3, backoffBase: .milliseconds(5), backoffCap: .milliseconds(20), totalBudget: .seconds(15),
                requestTimeout: .seconds(5)))
        let api = ServerAPIConfiguration(
            productionURL: appleBase + "/production", sandboxURL: appleBase + "/sandbox",
            patience: Patience(
                maxAttempts: 4, backoffBase: .milliseconds(5), backoffCap: .milliseconds(20), totalBudget: .seconds(20),
                requestTimeout: .seconds(5)))
        readPools = replicas.map { PostgresPool(configuration: $0, size: poolSize, logger: logger) }
        google = try SimulatedGooglePlay(pusher: Self.googlePusher)
        try await google.start()
        google.register(Self.googleAccount)
        let googleConfiguration = GooglePlayConfiguration(
            apiURL: google.baseURL, certsURL: google.certsURL,
            patience: Patience(
                maxAttempts: 4, backoffBase: .milliseconds(5), backoffCap: .milliseconds(20), totalBudget: .seconds(20),
                requestTimeout: .seconds(60)))
        services = LedgerServices(
            pool: pool, store: store, migrator: migrator,
            verifier: SignedDataVerifier(roots: [Self.authority.root, ReceiptAuthority.shared.root]),
            keyring: Self.keyring, receipts: receipts, serverAPI: api, google: googleConfiguration, replicas: readPools,
            replicaWait: replicaWait, keyCacheTTL: .zero, webhookPolicy: webhooks, digestKey: Self.digestKey, logger: logger)
        keys = services.keys
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var serverLogger = logger
        serverLogger.logLevel = .critical // a cancelled server's closing connections are not news
        let application = services.application(host: "127.0.0.1", port: 0, limits: limits, logger: serverLogger) { port in
            continuation.yield(port)
        }
        // As `ledger serve` runs it: a service group, stopped by a graceful shutdown (last listed first).
        let group = ServiceGroup(
            configuration: .init(
                services: services.backgroundServices(pollInterval: .milliseconds(50), projecting: projecting, logger: logger) + [
                    application
                ],
                logger: serverLogger))
        self.group = group
        task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        baseURL = "http://127.0.0.1:\(await iterator.next()!)"
        // Apple knows the app in both environments, signed for by one key, and delivers its
        // notifications to this server.
        var production = app
        production.environment = "Production"
        for known in [app, production] {
            serverAPI.register(
                known, key: .init(issuerID: Self.issuerID, keyID: Self.keyID, publicKey: Self.apiKey.publicKey),
                notificationURL: baseURL + "/v1/apps/\(Self.bundleID)/notifications/apple")
        }
        adminKey = try await keys.create(name: "admin", scopes: [.admin], bundleID: nil).secret
    }

    /// `keepingApple`: the App Store simulator goes on (for a server started with `appleOf:`).
    func stop(keepingApple: Bool = false) async {
        await group.triggerGracefulShutdown()
        _ = await task.result
        if !keepingApple { apple.stop() }
        await google.stop()
        await pool.close()
        for replica in readPools { await replica.close() }
    }

    func configureDefaultApp() async throws {
        let app = try await send(
            "PUT", "/v1/apps/\(Self.bundleID)", key: adminKey,
            json: [
                "environments": ["Production", "Sandbox"], "shared_secret": "s3cret", "apple_app_id": 4242,
                "app_store_server_api": ["issuer_id": Self.issuerID, "key_id": Self.keyID, "private_key": Self.apiKey.pemRepresentation],
            ])
        precondition(app.status == 200, "configuring the app failed: \(app.text)")
        for (product, body) in [
            ("pro.monthly", ["type": "auto_renewable", "entitlements": ["pro"]] as [String: Any]),
            ("pro.yearly", ["type": "auto_renewable", "entitlements": ["pro"]]),
            ("coins.100", ["type": "consumable", "grants": ["coins": 100]]),
            ("season.pass", ["type": "non_renewing", "entitlements": ["season"], "duration": "P30D"]),
            ("remove.ads", ["type": "non_consumable", "entitlements": ["no_ads"]]),
        ] {
            let answer = try await send("PUT", "/v1/apps/\(Self.bundleID)/products/\(product)", key: adminKey, json: body)
            precondition(answer.status == 200, "configuring \(product) failed: \(answer.text)")
        }
    }

    /// The default app on Google Play too: its package, the service account (the key file as an
    /// object, as an operator pastes it) and Google's products beside Apple's.
    func configureGoogle(testPurchases: Bool = false) async throws {
        let keyFile = try JSONSerialization.jsonObject(with: try Self.googleAccount.keyFile(tokenURI: google.tokenURL))
        let current = try await send("GET", "/v1/apps/\(Self.bundleID)", key: adminKey).json
        var body: [String: Any] = [
            "environments": ["Production", "Sandbox"], "apple_app_id": 4242,
            "google_play": [
                "package_name": Self.packageName, "service_account": keyFile, "test_purchases": testPurchases,
                "pubsub": [
                    "audience": baseURL + "/v1/apps/\(Self.bundleID)/notifications/google",
                    "service_account_email": "pubsub@example.iam.gserviceaccount.com",
                ],
            ] as [String: Any],
        ]
        if let policy = current["restore_policy"] as? String { body["restore_policy"] = policy }
        let app = try await send("PUT", "/v1/apps/\(Self.bundleID)", key: adminKey, json: body)
        precondition(app.status == 200, "configuring Google Play failed: \(app.text)")
        for (product, definition) in [
            ("pro", ["type": "auto_renewable", "entitlements": ["pro"]] as [String: Any]),
            ("pro_yearly", ["type": "auto_renewable", "entitlements": ["pro"]]),
            ("coins_500", ["type": "consumable", "grants": ["coins": 500]]),
            ("remove_ads", ["type": "non_consumable", "entitlements": ["no_ads"]]),
        ] {
            var definition = definition
            definition["store"] = "google_play"
            let answer = try await send("PUT", "/v1/apps/\(Self.bundleID)/products/\(product)", key: adminKey, json: definition)
            precondition(answer.status == 200, "configuring Google's \(product) failed: \(answer.text)")
        }
    }

    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: any Sendable] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: any Sendable]) ?? [:] }
        var errorCode: String? { (json["error"] as? [String: any Sendable])?["code"] as? String }
    }

    /// A client that hands redirects back (the console answers forms with 303s).
    static let withoutRedirects = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

    func send(
        _ method: String, _ path: String, key: String? = nil, json: [String: Any]? = nil, body: Data? = nil,
        headers: [(String, String)] = [], timeout: Int64 = 60, followingRedirects: Bool = true
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json { request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await (followingRedirects ? HTTPClient.shared : Self.withoutRedirects).execute(
            request, timeout: .seconds(timeout))
        let data = try await response.body.collect(upTo: 512 * 1024 * 1024)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Data(data.readableBytesView))
    }

    /// Events in the log, all or of one type: what a test counts to see that nothing (or exactly
    /// one thing) was recorded.
    func eventCount(ofType type: String? = nil) async throws -> Int {
        try await pool.query("SELECT count(*) AS n FROM ledger.events WHERE $1::text IS NULL OR event_type = $1", [type])[0]["n"].int()
    }

    /// Reads the default app's change feed from `after`, in long polls, until a change matches
    /// or `limit` has passed: whether one did, and the cursor reached (to read on from).
    func waitForChange(
        key: String, after: Int = 0, within limit: Duration = .seconds(30), where matches: ([String: any Sendable]) -> Bool
    ) async throws -> (found: Bool, after: Int) {
        var after = after
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            let page = try await send("GET", "/v1/apps/\(Self.bundleID)/changes?after=\(after)&wait=2&limit=1000", key: key)
            let found = (page.json["changes"] as? [[String: any Sendable]] ?? []).contains(where: matches)
            after = page.json["next_after"] as? Int ?? after
            if found { return (true, after) }
        }
        return (false, after)
    }

    func key(_ scopes: Set<Scope>, app: String? = nil) async throws -> String {
        try await keys.create(name: "k-\(UUID().uuidString.prefix(8))", scopes: scopes, bundleID: app).secret
    }
}
