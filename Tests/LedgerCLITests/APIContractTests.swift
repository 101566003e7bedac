import AppStoreSimulator
import Crypto
import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerSecrets
import LedgerTestSupport
import Testing
import WebhookReceiver

/// The API against its own description, by schemathesis (PyPI; `Tools/dev test` installs it):
/// every operation of `/openapi.json` of a real `ledger serve`, every check on — no server error,
/// no status, header or body outside the document, schema-valid requests accepted and invalid
/// ones refused, undeclared methods answered 405 — with the App Store simulator as Apple and an
/// app configured with data to find. The refusals no schema can state are listed, with their
/// reasons, in `Tools/Schemathesis/schemathesis.toml`.
@Suite(.takingTurns) struct APIContractTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `LEDGER_SCHEMATHESIS`, or the virtual environment `Tools/dev test` makes.
    static var schemathesis: String? {
        let candidates = [
            ProcessInfo.processInfo.environment["LEDGER_SCHEMATHESIS"], root.path + "/.build/tools/schemathesis/bin/schemathesis",
        ]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func everyOperationAnswersWithinItsDescription() async throws {
        let schemathesis = try #require(
            Self.schemathesis, "schemathesis is not installed: Tools/dev test installs it (or set LEDGER_SCHEMATHESIS)")
        try await HeavyTests.oneAtATime {
            let folder = NSTemporaryDirectory() + "ledger-contract-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let owner = try await TestCluster.database(on: TestCluster.privateCluster(), named: "ledger")

            // Apple: verifyReceipt and the App Store Server API, with the app's key registered.
            let authority = try TestCertificateAuthority()
            try authority.writeRoot(to: folder + "/root.der")
            let app = SimulatedApp(authority: authority, bundleID: "com.example.game", appAppleID: 4242, environment: "Sandbox")
            let apiKey = P256.Signing.PrivateKey()
            let simulator = ServerAPISimulator()
            simulator.register(
                app, key: .init(issuerID: "6a1e9c6e-0f3b-4a57-9b55-2f4f0a7c1d11", keyID: "CONTRACT1", publicKey: apiKey.publicKey))
            let apple = VerifyReceiptServer()
            let urls = try await apple.start { simulator.register(on: $0) }
            defer { apple.stop() }
            let base = String(urls.production.dropLast("/production/verifyReceipt".count))

            var environment = ProcessInfo.processInfo.environment
            environment["LEDGER_DATABASE_URL"] = owner.connectionString
            environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
            environment["LEDGER_APPLE_ROOT_CERTIFICATES"] = folder + "/root.der"
            environment["LEDGER_APPLE_VERIFY_RECEIPT_URL"] = urls.production
            environment["LEDGER_APPLE_SANDBOX_VERIFY_RECEIPT_URL"] = urls.sandbox
            environment["LEDGER_APPLE_SERVER_API_URL"] = base + "/production"
            environment["LEDGER_APPLE_SERVER_API_SANDBOX_URL"] = base + "/sandbox"
            environment["LEDGER_APPLE_RECONCILE_INTERVAL"] = "off"
            environment["LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS"] = "1"
            environment["LEDGER_AUTH_FAILURE_LIMIT"] = "100000" // schemathesis sends wrong keys on purpose, and many
            environment["LEDGER_LOG_LEVEL"] = "warning"
            // Digests signed, so their answer is checked against its schema too.
            try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: folder + "/digest.pem"))
            environment["LEDGER_DIGEST_KEY_FILE"] = folder + "/digest.pem"
            let created = try await ChildProcess.run(
                LedgerCommandTests.ledgerBinary, ["keys", "create", "--name", "contract", "--scopes", "admin"], environment: environment)
            let key = try #require(created.output.split(separator: "\n").last { $0.hasPrefix("lk_") }.map(String.init), "\(created.output)")
            let log = folder + "/serve.log"
            let served = try await ServeProcess.start(environment: environment, log: log)
            defer { served.stop() }
            let server = served.base
            let ready = try await poll(server + "/readyz", until: 200)
            try #require(ready?.0 == 200, "not ready: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")

            // Something to find: an app with its secrets, products, a webhook, a purchase, a grant.
            let apps = server + "/v1/apps/com.example.game"
            let receiver = WebhookReceiver(secret: "whsec_contract_0123456789abcdef")
            try await receiver.start()
            defer { Task { await receiver.stop() } }
            let setup: [(String, String, String)] = [
                (
                    "PUT", apps,
                    Self.json([
                        "environments": ["Sandbox"], "apple_app_id": 4242, "shared_secret": "contract-shared-secret",
                        "app_store_server_api": [
                            "issuer_id": "6a1e9c6e-0f3b-4a57-9b55-2f4f0a7c1d11", "key_id": "CONTRACT1",
                            "private_key": apiKey.pemRepresentation,
                        ],
                    ])
                ),
                ("PUT", apps + "/products/pro.monthly", #"{"type": "auto_renewable", "entitlements": ["pro"]}"#),
                ("PUT", apps + "/products/coins.100", #"{"type": "consumable", "grants": {"coins": 100}}"#),
                ("PUT", apps + "/webhooks/game", Self.json(["url": receiver.url, "secret": "whsec_contract_0123456789abcdef"])),
                (
                    "POST", apps + "/transactions",
                    Self.json([
                        "user_id": "player-1",
                        "signed_transaction": try app.signedTransaction(
                            SimulatedTransaction(
                                transactionID: "7001", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -3_600),
                                expiresDate: Date(timeIntervalSinceNow: 86_400))),
                    ])
                ),
                (
                    "POST", apps + "/users/player-1/grants",
                    #"{"entitlement": "pro", "reason": "contract test", "duration": "P7D", "grant_id": "g-1"}"#
                ),
            ]
            for (method, url, body) in setup {
                let answer = try await send(method, url, key: key, json: body)
                try #require((200..<300).contains(answer.0), "\(method) \(url): \(answer.1)")
            }

            // One worker: with two threads, hypothesis's `ast.parse` of its filters hit CPython
            // 3.11's spurious "AST constructor recursion depth mismatch" (fixed in 3.11.8) in one
            // run of three on a slow machine, and the crash of the checker failed the test.
            let outcome = try await ChildProcess.run(
                schemathesis,
                [
                    "--config-file", Self.root.path + "/Tools/Schemathesis/schemathesis.toml", "run", server + "/openapi.json",
                    "--checks", "all", "-H", "Authorization: Bearer \(key)", "--max-time", "180", "--workers", "1",
                    "--request-timeout", "40", "--max-response-time", "40", "--seed", "20261125",
                ],
                environment: ProcessInfo.processInfo.environment.merging(["NO_COLOR": "1", "SCHEMATHESIS_HOOKS": ""]) { $1 })
            #expect(outcome.status == 0, "schemathesis found answers outside the description:\n\(outcome.output.suffix(12_000))")
            let operations = try Self.documentedOperations()
            #expect(
                outcome.output.contains("Tested: \(operations)"),
                "all \(operations) operations were tested:\n\(outcome.output.suffix(3_000))")
        }
    }

    /// How many operations the description has.
    static func documentedOperations() throws -> Int {
        let data = try Data(contentsOf: root.appendingPathComponent("Sources/LedgerHTTP/Resources/openapi.json"))
        let paths = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["paths"] as? [String: [String: Any]])
        return paths.values.map { $0.keys.filter { ["get", "put", "post", "delete", "patch"].contains($0) }.count }.reduce(0, +)
    }

    static func json(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }
}
