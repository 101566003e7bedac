import AppStore
import AppStoreServerAPI
import AppStoreSimulator
import Crypto
import EmbeddedPostgres
import Foundation
import LedgerCore
import LedgerEventStore
import LedgerIngestion
import LedgerPostgres
import LedgerProjections
import LedgerSecrets
import LedgerTestSupport
import Testing

/// `ledger backfill` and `ledger reconcile` as an operator runs them: the binary, configured by the
/// environment, against a real PostgreSQL and the simulator's App Store Server API on loopback.
@Suite(.takingTurns) struct ReconcileCommandTests {
    static let bundle = "com.example.adopter"

    /// A database with the app configured (key, product), the simulator knowing three customers,
    /// and the environment the binary needs to reach both.
    struct Fixture {
        let folder: URL
        let environment: [String: String]
        let simulator: ServerAPISimulator
        let listener: VerifyReceiptServer
        let app: SimulatedApp
        let owner: PostgresConfiguration

        init() async throws {
            folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ledger-reconcile-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            owner = try await TestCluster.database(on: TestCluster.privateCluster(), named: "ledger")
            let authority = try TestCertificateAuthority()
            try authority.writeRoot(to: folder.appendingPathComponent("root.der").path)
            simulator = ServerAPISimulator()
            listener = VerifyReceiptServer()
            let simulator = simulator
            let urls = try await listener.start { simulator.register(on: $0) }
            let base = String(urls.production.dropLast("/production/verifyReceipt".count))
            app = SimulatedApp(authority: authority, bundleID: ReconcileCommandTests.bundle, appAppleID: 77, environment: "Sandbox")
            let key = P256.Signing.PrivateKey()
            let issuer = UUID().uuidString.lowercased()
            var production = app
            production.environment = "Production"
            for known in [app, production] {
                simulator.register(known, key: .init(issuerID: issuer, keyID: "CLIKEY1", publicKey: key.publicKey))
            }

            // The app as `PUT /v1/apps` would configure it, written through the same directory.
            var application = owner
            application.role = "ledger_app"
            let pool = PostgresPool(configuration: application, size: 2, logger: TestCluster.quietLogger)
            let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
            let secretsKey = SecretsKey.generate()
            let keyring = Keyring([try SecretsKey(base64: secretsKey)])
            let directory = AppDirectory(
                pool: pool, store: store, freshness: ProjectionFreshness(pool: pool, progress: nil, timeout: .milliseconds(100)),
                keyring: keyring)
            _ = try await directory.configure(
                ReconcileCommandTests.bundle, settings: AppSettings(appleAppID: 77), sharedSecret: nil,
                serverAPI: try ServerAPICredentials(
                    issuerID: issuer, keyID: "CLIKEY1", privateKeyPEM: key.pemRepresentation,
                    bundleID: ReconcileCommandTests.bundle))
            _ = try await directory.define(
                ProductDefinition(productID: "pro.monthly", type: .autoRenewable, entitlements: ["pro"]), in: ReconcileCommandTests.bundle)
            await pool.close()

            var environment = ProcessInfo.processInfo.environment
            environment["LEDGER_DATABASE_URL"] = owner.connectionString
            environment["LEDGER_SECRETS_KEY"] = secretsKey
            // The JWS root and, as an operator lists Apple Inc. Root beside G3, the receipts' root.
            try ReceiptAuthority.shared.rootDER.write(to: folder.appendingPathComponent("receipt-root.der"))
            let roots = [folder.appendingPathComponent("root.der").path, folder.appendingPathComponent("receipt-root.der").path]
            environment["LEDGER_APPLE_ROOT_CERTIFICATES"] = roots.joined(separator: ",")
            environment["LEDGER_APPLE_SERVER_API_URL"] = base + "/production"
            environment["LEDGER_APPLE_SERVER_API_SANDBOX_URL"] = base + "/sandbox"
            self.environment = environment
        }

        /// Waited for off the cooperative pool: the command calls the simulator, whose handlers
        /// run on that pool in this very process.
        func run(_ arguments: [String]) async -> (status: Int32, output: String) {
            let log = folder.appendingPathComponent("run-\(UUID().uuidString.prefix(6)).log").path
            let environment = self.environment
            let outcome =
                (try? await offThePool {
                    ChildProcess.wait(
                        try ChildProcess.spawn(LedgerCommandTests.ledgerBinary, arguments, environment: environment, outputPath: log))
                }) ?? -1
            return (outcome, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
        }
    }

    @Test func backfillImportsAFileResumesWithoutRecordingAgainAndReconcileRecoversMissedNotifications() async throws {
        let fixture = try await Fixture()
        defer { fixture.listener.stop() }
        let start = Date(timeIntervalSinceNow: -2 * 30 * 86_400 - 3600)
        var csv = "user_id,original_transaction_id,receipt_data\n"
        for n in 0..<4 {
            let first = SimulatedTransaction(
                transactionID: "a\(n)", productID: "pro.monthly", purchaseDate: start, expiresDate: start.addingTimeInterval(30 * 86_400))
            fixture.simulator.add(
                [
                    first, first.renewed(transactionID: "a\(n)-1", period: 30 * 86_400),
                    first.renewed(transactionID: "a\(n)-1", period: 30 * 86_400).renewed(transactionID: "a\(n)-2", period: 30 * 86_400),
                ],
                customer: "c\(n)", to: fixture.app)
            // The last customer's line gives the app receipt they kept, which knows only the first period.
            csv +=
                n < 3
                ? "user-\(n),a\(n),\n"
                : "user-\(n),,\(try ReceiptAuthority.shared.receipt(bundleID: Self.bundle, purchases: [first], created: start.addingTimeInterval(60)))\n"
        }
        let file = fixture.folder.appendingPathComponent("users.csv").path
        try csv.write(toFile: file, atomically: true, encoding: .utf8)

        let beforeImport = RFC3339.microseconds(Date())
        let first = await fixture.run(["backfill", "--app", Self.bundle, "--file", file])
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("4 lines: 4 imported (12 transactions), 0 done before, 0 failed"), "\(first.output)")
        // The books as they were before the import, and as they are: the same command, --known-at.
        let books = await fixture.run(["export", "transactions", "--app", Self.bundle, "--environment", "Sandbox"])
        let closedBooks = await fixture.run([
            "export", "transactions", "--app", Self.bundle, "--environment", "Sandbox", "--known-at", beforeImport,
        ])
        let lines = { (text: String) in
            text.split(whereSeparator: \.isNewline).filter { $0.contains(",Sandbox,") || $0.hasPrefix("transaction_id,") }
        }
        #expect(
            books.status == 0 && lines(books.output).count == 13
                && lines(books.output).first?.hasSuffix(",recorded_at,offer_type,offer_id,offer_discount_type,store,position") == true,
            "\(books.output)")
        #expect(closedBooks.status == 0 && lines(closedBooks.output).count == 1, "only the header: \(closedBooks.output)")
        let second = await fixture.run(["backfill", "--app", Self.bundle, "--file", file])
        #expect(
            second.status == 0 && second.output.contains("4 lines: 0 imported (0 transactions), 4 done before, 0 failed"),
            "\(second.output)")

        // Two notifications Apple could not deliver (no URL answered): one run of reconcile records them.
        let renewal = SimulatedTransaction(
            transactionID: "a0-3", originalTransactionID: "a0", productID: "pro.monthly",
            purchaseDate: Date(timeIntervalSinceNow: -60), expiresDate: Date(timeIntervalSinceNow: 30 * 86_400))
        await fixture.simulator.send(try fixture.app.notificationV2("DID_RENEW", transaction: renewal), of: fixture.app)
        await fixture.simulator.send(try fixture.app.notificationV2("TEST"), of: fixture.app)
        let reconciled = await fixture.run(["reconcile", "--app", Self.bundle])
        #expect(reconciled.status == 0, "\(reconciled.output)")
        #expect(
            reconciled.output.contains("Sandbox") && reconciled.output.contains("2 notifications in Apple's history, 2 recorded"),
            "\(reconciled.output)")
        let again = await fixture.run(["reconcile", "--app", Self.bundle])
        #expect(again.output.contains("0 recorded, 2 already recorded"), "\(again.output)")

        let missing = await fixture.run([
            "backfill", "--app", Self.bundle, "--file", fixture.folder.appendingPathComponent("none.csv").path,
        ])
        #expect(missing.status != 0 && missing.output.contains("cannot read"), "\(missing.output)")
    }

    /// `ledger retention` as an operator runs it against Apple (the simulator): a PNG and a message
    /// uploaded, a message over Apple's limit refused before anything is sent, the review states
    /// listed, an approved message made a product's default.
    @Test func retentionMessagesAreManagedFromTheCommandLine() async throws {
        let fixture = try await Fixture()
        defer { fixture.listener.stop() }
        let png = fixture.folder.appendingPathComponent("gift.png")
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            [0, 0, 0, UInt8(data.count)] + Array(type.utf8) + data + [0, 0, 0, 0]
        }
        try Data(
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", [0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]) + chunk("IDAT", [0])
                + chunk("IEND", [])
        ).write(to: png)
        let (image, message) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let target = ["--app", Self.bundle, "--environment", "Sandbox"]
        let uploaded = await fixture.run(["retention", "upload-image"] + target + ["--id", image, "--file", png.path])
        #expect(uploaded.status == 0 && uploaded.output.contains("uploaded image \(image)"), "\(uploaded.output)")
        let sent = await fixture.run(
            ["retention", "upload-message"] + target + [
                "--id", message, "--header", "Stay with us", "--body", "Half price for three months.", "--image", image, "--alt-text",
                "A gift",
            ])
        #expect(sent.status == 0, "\(sent.output)")
        let tooLong = await fixture.run(
            ["retention", "upload-message"] + target + [
                "--id", UUID().uuidString, "--header", String(repeating: "x", count: 67), "--body", "b",
            ])
        #expect(tooLong.status != 0 && tooLong.output.contains("header is 1–66 characters"), "\(tooLong.output)")
        let listed = await fixture.run(["retention", "list"] + target)
        #expect(listed.status == 0 && listed.output.contains("message \(message)  APPROVED"), "\(listed.output)")
        #expect(listed.output.contains("image   \(image)  APPROVED  FULL_SIZE"), "\(listed.output)")
        let made = await fixture.run(
            ["retention", "default"] + target + ["--product", "pro.monthly", "--locale", "en-US", "--message", message])
        #expect(made.status == 0, "\(made.output)")
        #expect(fixture.simulator.defaultMessages(of: fixture.app) == ["pro.monthly/en-US": message])
        let url = await fixture.run(
            ["retention", "realtime-url"] + target + ["--url", "https://ledger.example.com/v1/apps/\(Self.bundle)/apple/retention"])
        #expect(url.status == 0 && url.output.contains("Sandbox realtime URL: https://ledger.example.com"), "\(url.output)")
        #expect(fixture.simulator.realtimeURL(of: fixture.app) == "https://ledger.example.com/v1/apps/\(Self.bundle)/apple/retention")
    }
}
