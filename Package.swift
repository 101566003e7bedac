// swift-tools-version: 6.1
import PackageDescription

/// Applied to every target so the whole package reads the same way.
let swiftSettings: [SwiftSetting] = [
    // Swift 6 language mode is the package default; these keep signatures explicit.
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "entitlement-ledger",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ledger", targets: ["ledger"]),
        .executable(name: "appstore-simulator", targets: ["appstore-simulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.0.0"),
        // Traits named explicitly: with the defaults SwiftPM orders -D flags differently between
        // `swift build` and `swift test` and recompiles ~100 files on every switch.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0", traits: []),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        // OTLP over HTTP only: the gRPC exporter would add grpc-swift to every build for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // Settings read through one reader; no traits: the environment is its only provider here.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.0.0", traits: []),
    ],
    targets: [
        // libpq's C API, found through pkg-config (Debian: libpq-dev).
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The text formats every layer writes and reads: JSON (one tree, one writer), UTC timestamps.
        .target(
            name: "LedgerFormats",
            swiftSettings: swiftSettings
        ),
        // Settings through swift-configuration's reader, by the ledger's rules: a value that does
        // not parse is a problem naming its key, never the default.
        .target(
            name: "LedgerSettings",
            dependencies: [.product(name: "Configuration", package: "swift-configuration")],
            swiftSettings: swiftSettings
        ),
        // Traces: spans for work inside a traced operation, trace context carried to later work.
        .target(
            name: "LedgerTracing",
            dependencies: [.product(name: "Tracing", package: "swift-distributed-tracing")],
            swiftSettings: swiftSettings
        ),
        // The entitlement domain: events, catalogue, reducers, decisions. Foundation only, no I/O.
        .target(
            name: "LedgerCore",
            dependencies: ["LedgerFormats"],
            swiftSettings: swiftSettings
        ),
        // Apple's evidence: StoreKit 2 JWS and notification verification (no database).
        .target(
            name: "AppStore",
            dependencies: [
                "LedgerTracing",
                "LedgerCore",
                "LedgerFormats",
                "LedgerSettings",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Apple's pull side: the App Store Server API client (bearer JWTs, paging, retries). No database.
        .target(
            name: "AppStoreServerAPI",
            dependencies: [
                "LedgerTracing",
                "AppStore",
                "LedgerCore",
                "LedgerFormats",
                "LedgerSettings",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Google Play's evidence and pull side: RTDN pushes and their OIDC tokens, the service
        // account's OAuth tokens, the Developer API client (androidpublisher v3). No database.
        .target(
            name: "GooglePlay",
            dependencies: [
                "LedgerCore",
                "LedgerFormats",
                "LedgerSettings",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                // RSA: Google signs and is signed for with RS256 only.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The loop every background part runs in (steps, heartbeat, backoff, one failure line), and
        // the heartbeat readiness reads.
        .target(
            name: "LedgerBackground",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // A small libpq client: connections, a fixed pool on dedicated threads, LISTEN/NOTIFY, migrations.
        .target(
            name: "LedgerPostgres",
            dependencies: [
                "LedgerBackground",
                "LedgerTracing",
                "CLibPQ",
                "LedgerFormats",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The numbered SQL migrations in schema/, shipped inside the binary.
        .target(
            name: "LedgerSchema",
            dependencies: ["LedgerPostgres"],
            // Sources/LedgerSchema/schema is a symbolic link to the top-level schema/ folder.
            resources: [.process("schema")],
            swiftSettings: swiftSettings
        ),
        // A private PostgreSQL cluster for newcomers and tests, run from the machine's binaries.
        .target(
            name: "EmbeddedPostgres",
            dependencies: ["LedgerPostgres", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // The append-only event log: appends, reads behind the snapshot fence, subscriptions, hash chains.
        .target(
            name: "LedgerEventStore",
            dependencies: [
                "LedgerBackground",
                "LedgerTracing",
                "LedgerFormats",
                "LedgerPostgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The bridge both sides share: a domain event as a stored event, and back.
        .target(
            name: "LedgerFacts",
            dependencies: ["LedgerCore", "LedgerFormats", "LedgerEventStore", "LedgerPostgres"],
            swiftSettings: swiftSettings
        ),
        // Projections: the domain's state derived from the log, stored, rebuilt blue-green.
        .target(
            name: "LedgerProjections",
            dependencies: [
                "LedgerTracing",
                "LedgerBackground", "LedgerCore", "LedgerFacts", "LedgerEventStore", "LedgerFormats", "LedgerPostgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The Merkle tree over the whole log, its signed digests and proofs.
        .target(
            name: "LedgerProofs",
            dependencies: [
                "LedgerBackground", "LedgerCore", "LedgerEventStore", "LedgerFormats", "LedgerPostgres",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // What is held about a user: the subject-access export.
        .target(
            name: "LedgerPrivacy",
            dependencies: [
                "LedgerAccess", "LedgerCore", "LedgerEventStore", "LedgerFacts", "LedgerFormats", "LedgerPostgres", "LedgerProjections",
                "LedgerProofs",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Evidence in, events out: verification against each app's configuration, raw evidence
        // storage, ownership decisions, consumptions and grants, read-your-writes answers.
        .target(
            name: "LedgerIngestion",
            dependencies: [
                "LedgerTracing",
                "AppStore", "AppStoreServerAPI", "GooglePlay", "LedgerCore", "LedgerFacts", "LedgerEventStore", "LedgerFormats",
                "LedgerProjections", "LedgerPostgres", "LedgerSecrets",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Reconciliation with Apple: missed notifications recovered from Apple's history (one
        // server at a time), the background reconciler, answers to CONSUMPTION_REQUESTs, backfill.
        .target(
            name: "LedgerReconciliation",
            dependencies: [
                "AppStore", "AppStoreServerAPI", "GooglePlay", "LedgerBackground", "LedgerCore", "LedgerEventStore", "LedgerFormats",
                "LedgerIngestion", "LedgerPostgres", "LedgerProjections",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Secrets sealed at rest: AES-256-GCM envelopes bound to their row, the keys' proofs, rotation.
        .target(
            name: "LedgerSecrets",
            dependencies: ["LedgerCore", "LedgerPostgres", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // API keys: created, listed, revoked and recognised, with their scopes (ledger.api_keys).
        .target(
            name: "LedgerAccess",
            dependencies: ["LedgerCore", "LedgerFormats", "LedgerPostgres", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // Changes: what each fact meant for each user, derived from the log; the change feed.
        .target(
            name: "LedgerChanges",
            dependencies: [
                "LedgerTracing",
                "LedgerBackground", "LedgerCore", "LedgerFacts", "LedgerEventStore", "LedgerFormats", "LedgerPostgres", "LedgerProjections",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Webhooks: signed deliveries of changes, at least once, in order per user.
        .target(
            name: "LedgerWebhooks",
            dependencies: [
                "LedgerTracing",
                "LedgerBackground", "LedgerChanges", "LedgerCore", "LedgerEventStore", "LedgerPostgres", "LedgerProofs", "LedgerSecrets",
                "LedgerSettings",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The console: pages for support and finance (server-rendered Mustache, SVG charts, sessions).
        .target(
            name: "LedgerConsole",
            dependencies: [
                "AppStoreServerAPI", "GooglePlay", "LedgerAccess", "LedgerCore", "LedgerIngestion", "LedgerPostgres", "LedgerProjections",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Templates")],
            swiftSettings: swiftSettings
        ),
        // The HTTP edge (Hummingbird 2): routes over the endpoints the composition root builds.
        .target(
            name: "LedgerHTTP",
            dependencies: [
                "LedgerTracing",
                "AppStoreServerAPI",
                "GooglePlay",
                "LedgerAccess",
                "LedgerChanges",
                "LedgerConsole",
                "LedgerCore",
                "LedgerFormats",
                "LedgerIngestion",
                "LedgerPrivacy",
                "LedgerProjections",
                "LedgerProofs",
                "LedgerSettings",
                "LedgerWebhooks",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Resources/openapi.json")],
            swiftSettings: swiftSettings
        ),
        // The composition root: every part of a running ledger built once, its background services
        // and its pools as services of one group.
        .target(
            name: "LedgerServer",
            dependencies: [
                "AppStore", "AppStoreServerAPI", "GooglePlay", "LedgerAccess", "LedgerBackground", "LedgerChanges", "LedgerConsole",
                "LedgerCore", "LedgerEventStore", "LedgerHTTP",
                "LedgerIngestion", "LedgerPostgres", "LedgerPrivacy", "LedgerProjections", "LedgerProofs", "LedgerReconciliation",
                "LedgerSecrets", "LedgerWebhooks", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The `ledger` command: serve, migrate, verify.
        .executableTarget(
            name: "ledger",
            dependencies: [
                "LedgerAccess",
                "AppStoreServerAPI",
                "GooglePlay",
                "LedgerReconciliation",
                "LedgerPostgres",
                "LedgerSchema",
                "EmbeddedPostgres",
                "LedgerEventStore",
                "LedgerHTTP",
                "LedgerServer",
                "LedgerSecrets",
                "LedgerSettings",
                "LedgerWebhooks",
                "LedgerProjections",
                "LedgerIngestion",
                "LedgerPrivacy",
                "LedgerProofs",
                "LedgerCore",
                "LedgerTracing",
                "AppStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // Benchmarks: our append path against raw INSERT and COPY on the same cluster.
        .executableTarget(
            name: "ledger-bench",
            dependencies: [
                "LedgerAccess",
                "LedgerBackground",
                "LedgerPostgres",
                "LedgerProofs",
                "LedgerSchema",
                "EmbeddedPostgres",
                "LedgerEventStore",
                "LedgerCore",
                "LedgerProjections",
                "LedgerFacts",
                "LedgerFormats",
                "AppStore",
                "AppStoreSimulator",
                "AppStoreServerAPI",
                "LedgerHTTP",
                "LedgerServer",
                "LedgerIngestion",
                "LedgerReconciliation",
                "LedgerChanges",
                "LedgerSecrets",
                "LedgerWebhooks",
                "LedgerTestSupport",
                "WebhookReceiver",
                "OTLPReceiver",
                "LedgerTracing",
                "GooglePlay",
                "GooglePlaySimulator",
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tools/Bench",
            swiftSettings: swiftSettings
        ),
        // A local stand-in for the App Store: a test certificate chain shaped like Apple's, signed
        // StoreKit 2 evidence and V2 notifications, verifyReceipt with scripted answers, a sender.
        .target(
            name: "AppStoreSimulator",
            dependencies: [
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                // RSA, for legacy receipts signed like Apple's.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tools/AppStoreSimulator",
            swiftSettings: swiftSettings
        ),
        // A local stand-in for Google Play: the OAuth token endpoint, androidpublisher v3 with
        // purchases in state, Pub/Sub pushes signed like Google's and the keys to check them.
        .target(
            name: "GooglePlaySimulator",
            dependencies: [
                "LoopbackServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tools/GooglePlaySimulator",
            swiftSettings: swiftSettings
        ),
        // A router served on loopback for the tests' stand-ins, stopped gracefully.
        .target(
            name: "LoopbackServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tools/LoopbackServer",
            swiftSettings: swiftSettings
        ),
        // A game server's webhook endpoint for tests and benchmarks: verifies signatures, misbehaves on demand.
        .target(
            name: "WebhookReceiver",
            dependencies: [
                "LoopbackServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Tools/WebhookReceiver",
            swiftSettings: swiftSettings
        ),
        // An OpenTelemetry collector's OTLP/HTTP trace endpoint for tests and benchmarks: spans kept in memory.
        .target(
            name: "OTLPReceiver",
            dependencies: [
                "LoopbackServer",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Tools/OTLPReceiver",
            swiftSettings: swiftSettings
        ),
        // The parsers of untrusted bytes as fuzz targets, shared by `ledger-fuzz` and the regression tests.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "AppStore", "LedgerCore", "LedgerFormats",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Tools/Fuzz/Targets",
            swiftSettings: swiftSettings
        ),
        // `ledger-fuzz`: libFuzzer's driver over the targets, their seed corpora, replays (`Tools/fuzz`).
        .executableTarget(
            name: "ledger-fuzz",
            dependencies: ["FuzzTargets", "AppStoreSimulator"],
            path: "Tools/Fuzz/Driver",
            swiftSettings: swiftSettings
        ),
        // `appstore-simulator serve`: the simulator as a process, for demos (see docs/simulator.md).
        .executableTarget(
            name: "appstore-simulator",
            dependencies: [
                "AppStoreSimulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Tools/Simulator",
            swiftSettings: swiftSettings
        ),
        // Random and sample histories of the domain for tests: pure Swift, no database.
        .target(
            name: "LedgerDomainTestSupport",
            dependencies: ["LedgerCore"],
            swiftSettings: swiftSettings
        ),
        // Throwaway clusters and databases for tests (never linked into the server).
        .target(
            name: "LedgerTestSupport",
            dependencies: ["LedgerPostgres", "LedgerSchema", "EmbeddedPostgres", "LedgerEventStore", "LedgerCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerPostgresTests",
            dependencies: ["LedgerBackground", "LedgerPostgres", "LedgerSchema", "LedgerTestSupport", "EmbeddedPostgres"],
            swiftSettings: swiftSettings
        ),
        // The background loop with a recording sleep and an in-memory log: no database, no clock.
        .testTarget(
            name: "LedgerBackgroundTests",
            dependencies: [
                "LedgerBackground", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerEventStoreTests",
            dependencies: ["LedgerEventStore", "LedgerPostgres", "LedgerSchema", "LedgerTestSupport", "EmbeddedPostgres"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerTracingTests",
            dependencies: ["LedgerTracing", .product(name: "Tracing", package: "swift-distributed-tracing")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerCoreTests",
            dependencies: [
                "LedgerCore", "LedgerFormats", "LedgerDomainTestSupport", .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerProjectionsTests",
            dependencies: [
                "LedgerProjections", "LedgerFacts", "LedgerCore", "LedgerEventStore", "LedgerPostgres", "LedgerSchema", "LedgerTestSupport",
                "LedgerDomainTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "AppStoreSimulator", "LedgerCore", "LedgerTestSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppStoreServerAPITests",
            dependencies: [
                "AppStoreServerAPI", "AppStore", "AppStoreSimulator", "LedgerCore", "LedgerTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Google's fixtures decoded; the client and the push verifier against the simulator over loopback.
        .testTarget(
            name: "GooglePlayTests",
            dependencies: [
                "GooglePlay", "GooglePlaySimulator", "LedgerCore", "LedgerSettings", "LedgerTestSupport", "LoopbackServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerIngestionTests",
            dependencies: [
                "LedgerIngestion", "LedgerCore", "LedgerDomainTestSupport", "LedgerEventStore", "LedgerFacts", "LedgerFormats",
                "LedgerPostgres", "LedgerTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerFormatsTests",
            dependencies: ["LedgerFormats"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerFactsTests",
            dependencies: ["LedgerFacts", "LedgerCore", "LedgerDomainTestSupport", "LedgerEventStore", "LedgerPostgres"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerSchemaTests",
            dependencies: ["LedgerSchema", "LedgerPostgres", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EmbeddedPostgresTests",
            dependencies: ["EmbeddedPostgres", "LedgerPostgres", "LedgerTestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerPrivacyTests",
            dependencies: ["LedgerPrivacy", "AppStoreSimulator"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FuzzRegressionTests",
            dependencies: ["FuzzTargets", "AppStoreSimulator"],
            exclude: ["Inputs"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerSecretsTests",
            dependencies: ["LedgerSecrets", "LedgerCore", "LedgerPostgres", "LedgerSchema", "LedgerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerAccessTests",
            dependencies: ["LedgerAccess", "LedgerCore", "LedgerPostgres", "LedgerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerChangesTests",
            dependencies: ["LedgerChanges"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerWebhooksTests",
            dependencies: ["LedgerWebhooks", "LedgerCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerReconciliationTests",
            dependencies: ["LedgerReconciliation"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerConsoleTests",
            dependencies: ["LedgerConsole"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerHTTPTests",
            dependencies: [
                "LedgerHTTP", "LedgerCore", "LedgerFacts", "LedgerPostgres", .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        // The composed server without a database: routes, middleware and refusals in memory.
        .testTarget(
            name: "LedgerServerTests",
            dependencies: [
                "LedgerServer", "LedgerHTTP", "AppStore", "LedgerEventStore", "LedgerPostgres", "LedgerSchema", "LedgerSecrets",
                "LedgerTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        // The repository read as a newcomer reads it: docs/architecture.md against the imports.
        .testTarget(
            name: "RepositoryTests",
            swiftSettings: swiftSettings
        ),
        // The whole server as it is deployed: real PostgreSQL, replicas, the App Store simulator,
        // webhook receivers and a browser, through HTTP.
        .testTarget(
            name: "LedgerIntegrationTests",
            dependencies: [
                "LedgerAccess", "LedgerReconciliation", "AppStoreServerAPI",
                "LedgerHTTP", "LedgerServer", "LedgerIngestion", "LedgerProjections", "LedgerEventStore", "LedgerPostgres", "LedgerSchema",
                "LedgerTestSupport", "LedgerFacts", "EmbeddedPostgres", "AppStore", "AppStoreSimulator", "LedgerCore",
                "LedgerChanges", "LedgerPrivacy", "LedgerSecrets", "LedgerWebhooks", "WebhookReceiver", "GooglePlay", "GooglePlaySimulator",
                "LedgerProofs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerCLITests",
            dependencies: [
                "ledger", "LedgerTestSupport", "LedgerEventStore", "LedgerFacts", "LedgerPostgres", "EmbeddedPostgres",
                "LedgerIngestion", "LedgerProjections", "LedgerCore", "LedgerSecrets", "AppStore", "AppStoreServerAPI", "AppStoreSimulator",
                "WebhookReceiver", "OTLPReceiver", "LedgerHTTP", "LedgerWebhooks", "GooglePlaySimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
