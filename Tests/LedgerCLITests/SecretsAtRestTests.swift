import AppStoreSimulator
import Crypto
import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerSecrets
import LedgerTestSupport
import Synchronization
import Testing
import WebhookReceiver

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Stored secrets as an operator meets them: `ledger serve` on a database URL refuses to start
/// without a key; a `pg_dump` holds no shared secret, In-App Purchase key or webhook secret; the
/// key is rotated while two servers run, each keeps opening every secret (V1 notifications checked
/// against the shared secret, webhook deliveries signed), and the old key is refused afterwards.
@Suite(.takingTurns) struct SecretsAtRestTests {
    static let bundle = "com.example.sealed"
    static let sharedSecret = "shared-7c1e55aa90b34d0f"
    static let webhookSecret = "whsec_sealed_9f8e7d6c5b4a39281706"

    /// One `ledger serve` process on a port of its own, stopped with the test.
    final class Server: Sendable {
        let port: Int
        let pid: pid_t
        let log: String
        var base: String { "http://127.0.0.1:\(port)" }

        init(environment: [String: String], folder: String) async throws {
            log = folder + "/serve-\(UUID().uuidString.prefix(6)).log"
            let process = try await ServeProcess.start(environment: environment, log: log)
            (pid, port) = (process.pid, process.port)
            let ready = try await poll(base + "/readyz", until: 200)
            try #require(ready?.0 == 200, "not ready: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }

        func stop() {
            kill(pid, SIGKILL)
            _ = ChildProcess.wait(pid)
        }
    }

    @Test func aDumpHoldsNoSecretAndARotationKeepsTwoServersWorking() async throws {
        try await HeavyTests.oneAtATime {
            let folder = NSTemporaryDirectory() + "ledger-sealed-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let owner = try await TestCluster.database(on: TestCluster.privateCluster(), named: "ledger")
            let authority = try TestCertificateAuthority()
            try authority.writeRoot(to: folder + "/root.der")
            let app = SimulatedApp(authority: authority, bundleID: Self.bundle, appAppleID: 31, environment: "Sandbox")
            var base = ProcessInfo.processInfo.environment
            base["LEDGER_APPLE_ROOT_CERTIFICATES"] = folder + "/root.der"
            base["LEDGER_DATABASE_URL"] = owner.connectionString
            base["LEDGER_APPLE_RECONCILE_INTERVAL"] = "off"
            base["LEDGER_LOG_LEVEL"] = "warning"
            base["LEDGER_WEBHOOK_FIRST_RETRY_MS"] = "50"
            base["LEDGER_WEBHOOK_LONGEST_RETRY"] = "1"
            base["LEDGER_WEBHOOK_POLL_MS"] = "100"
            base["LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS"] = "1" // the receiver is on loopback
            base.removeValue(forKey: "LEDGER_SECRETS_KEY")
            let (old, new) = (SecretsKey.generate(), SecretsKey.generate())
            func with(_ key: String, new: String? = nil) -> [String: String] {
                var environment = base
                environment["LEDGER_SECRETS_KEY"] = key
                environment["LEDGER_SECRETS_NEW_KEY"] = new
                return environment
            }

            // No key with a database URL: refused at start, saying what to set.
            let keyless = try await ChildProcess.run(LedgerCommandTests.ledgerBinary, ["serve", "--port", "0"], environment: base)
            #expect(keyless.status != 0 && keyless.output.contains("LEDGER_SECRETS_KEY is not set"), "\(keyless.output)")
            let garbled = try await ChildProcess.run(
                LedgerCommandTests.ledgerBinary, ["serve", "--port", "0"], environment: with("c2hvcnQ="))
            #expect(garbled.status != 0 && garbled.output.contains("LEDGER_SECRETS_KEY is not a usable key"), "\(garbled.output)")
            #expect(!garbled.output.contains("c2hvcnQ="), "the value itself is never echoed")

            let created = try await ChildProcess.run(
                LedgerCommandTests.ledgerBinary, ["keys", "create", "--name", "ops", "--scopes", "admin"], environment: base)
            let key = try #require(created.output.split(separator: "\n").last { $0.hasPrefix("lk_") }.map(String.init), "\(created.output)")
            let first = try await Server(environment: with(old), folder: folder)
            var second = try await Server(environment: with(old), folder: folder)
            defer { first.stop(); second.stop() }

            let receiver = WebhookReceiver(secret: Self.webhookSecret)
            try await receiver.start()
            defer { Task { await receiver.stop() } }
            let pem = P256.Signing.PrivateKey().pemRepresentation
            let apps = "/v1/apps/\(Self.bundle)"
            let configured = try await send(
                "PUT", first.base + apps, key: key,
                json: Self.json([
                    "environments": ["Sandbox"], "apple_app_id": 31, "shared_secret": Self.sharedSecret,
                    "app_store_server_api": [
                        "issuer_id": "6a1e9c6e-0f3b-4a57-9b55-2f4f0a7c1d11", "key_id": "SEALED01", "private_key": pem,
                    ],
                ]))
            #expect(configured.0 == 200, "\(configured.1)")
            #expect(
                try await send(
                    "PUT", first.base + apps + "/products/pro", key: key, json: #"{"type": "auto_renewable", "entitlements": ["pro"]}"#
                ).0 == 200)
            let hook = try await send(
                "PUT", second.base + apps + "/webhooks/game", key: key,
                json: Self.json(["url": receiver.url, "secret": Self.webhookSecret]))
            #expect(hook.0 == 201, "\(hook.1)")

            /// A V1 notification through `server` (checked against the shared secret) and a
            /// purchase whose change the receiver must get signed with the webhook secret.
            var round = 0
            func exercise(_ server: Server, _ label: String) async throws {
                round += 1
                let purchase = SimulatedTransaction(
                    transactionID: "t-\(round)", productID: "pro", purchaseDate: Date(timeIntervalSinceNow: -60),
                    expiresDate: Date(timeIntervalSinceNow: 86_400))
                let v1 = try await post(
                    server.base + apps + "/notifications/apple",
                    try app.notificationV1("DID_RENEW", password: Self.sharedSecret, transactions: [purchase]))
                #expect(v1.0 == 200, "\(label): \(v1.1)")
                let bought = try await send(
                    "POST", server.base + apps + "/transactions", key: key,
                    json: Self.json(["user_id": "player-\(round)", "signed_transaction": try app.signedTransaction(purchase)]))
                #expect(bought.0 == 200, "\(label): \(bought.1)")
                for _ in 0..<300 where !receiver.accepted.contains(where: { $0.userID == "player-\(round)" }) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let delivered = receiver.accepted.filter { $0.userID == "player-\(round)" }
                #expect(!delivered.isEmpty && delivered.allSatisfy(\.signatureValid), "\(label): a signed delivery")
            }
            try await exercise(first, "before the rotation")

            // The dump: no secret as it was given, nor the private key's bytes.
            func dumpHoldsNoSecret(_ moment: String) async throws {
                let binaries = try PostgresBinaries.locate()
                let dump = try await ChildProcess.run(
                    binaries.directory.appendingPathComponent("pg_dump").path, ["--dbname", owner.connectionString])
                try #require(dump.status == 0 && dump.output.contains("ledger.secrets_keys"), "\(moment): \(dump.output.prefix(500))")
                let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
                for needle in [Self.sharedSecret, Self.webhookSecret, "PRIVATE KEY"] + body.map(String.init) {
                    #expect(!dump.output.contains(needle), "\(moment): the dump holds \(needle)")
                }
                #expect(dump.output.contains("sealed:v1:"), "\(moment): the sealed values are there")
            }
            try await dumpHoldsNoSecret("before the rotation")

            // Rotation, step 1: every secret sealed under both keys while both servers run.
            let rotated = try await ChildProcess.run(
                LedgerCommandTests.ledgerBinary, ["secrets", "rotate"], environment: with(old, new: new))
            #expect(rotated.status == 0 && rotated.output.contains("sealed 3 secret(s) again"), "\(rotated.output)")
            // Step 2: one server moves to the new key; the other still holds the old one.
            second.stop()
            second = try await Server(environment: with(new), folder: folder)
            try await exercise(first, "the server on the old key, mid-rotation")
            try await exercise(second, "the server on the new key, mid-rotation")
            // Step 3: every server on the new key, then the old one forgotten.
            first.stop()
            let third = try await Server(environment: with(new), folder: folder)
            defer { third.stop() }
            let finished = try await ChildProcess.run(
                LedgerCommandTests.ledgerBinary, ["secrets", "rotate", "--finish"], environment: with(new))
            #expect(finished.status == 0 && finished.output.contains("forgotten"), "\(finished.output)")
            try await exercise(third, "after the rotation")
            try await exercise(second, "after the rotation, the other server")
            try await dumpHoldsNoSecret("after the rotation")

            let audited = try await send("GET", third.base + "/v1/audit-log?limit=100", key: key)
            #expect(audited.1.contains("secrets.rotate") && audited.1.contains("secrets.rotate.finish"), "\(audited.1)")
            #expect(!audited.1.contains(Self.sharedSecret) && !audited.1.contains(Self.webhookSecret), "no secret in the audit log")

            // The old key no longer opens the database: refused at start, naming the setting.
            let stale = try await ChildProcess.run(LedgerCommandTests.ledgerBinary, ["serve", "--port", "0"], environment: with(old))
            #expect(
                stale.status != 0 && stale.output.contains("LEDGER_SECRETS_KEY does not open this database's secrets"), "\(stale.output)")
        }
    }

    static func json(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    func post(_ url: String, _ body: Data) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
