import AppStoreSimulator
import ArgumentParser
import Crypto
import Foundation
import Hummingbird

/// `appstore-simulator serve`: the local App Store for demos and for CI that cannot reach Apple.
/// One listener serves Apple's verifyReceipt and App Store Server API (production and sandbox) and
/// a small control API that signs StoreKit 2 transactions, registers receipts, and sends
/// notifications to a ledger.
@main
struct SimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore-simulator",
        abstract: "A local stand-in for the App Store: signed transactions, verifyReceipt, notifications.",
        discussion: """
            Start it, then point the ledger at it:
              LEDGER_APPLE_ROOT_CERTIFICATES=<state>/root.der
              LEDGER_APPLE_VERIFY_RECEIPT_URL=http://127.0.0.1:<port>/production/verifyReceipt
              LEDGER_APPLE_SANDBOX_VERIFY_RECEIPT_URL=http://127.0.0.1:<port>/sandbox/verifyReceipt
            Control API (JSON):
              POST /sign/transaction  {"transaction_id", "product_id", "type"?, "original_transaction_id"?,
                                       "purchase_date"?, "expires_date"?, "quantity"?, "price"?, "currency"?,
                                       "revocation_date"?, "app_account_token"?}      → {"signed_transaction"}
              POST /receipts          {"transactions": [...], "environment"?, "shared_secret"?} → {"receipt_data"}
              POST /notify            {"type", "subtype"?, "transaction"?, "auto_renew"?, "version"? (2 or 1),
                                       "password"? (V1), "redeliveries"?}                       → {"statuses"}
            Never trust its root in production: the ledger logs a warning when it does.
            """)

    @Option(help: "Port to listen on.") var port = 9090
    @Option(help: "Folder for the certificate chain (reused across restarts).") var state = ".ledger/appstore-simulator"
    @Option(help: "The ledger's base URL, for notifications.") var ledger = "http://127.0.0.1:8080"
    @Option(help: "The app's bundle id.") var bundleID = "com.example.game"
    @Option(help: "Apple app id put in notifications.") var appAppleID: Int64 = 1_234_567_890
    @Option(help: "Production or Sandbox.") var environment = "Sandbox"

    static let issuerID = "5b1a44ad-8d51-4f0a-9c5e-3a6f1e2b7c10"
    static let keyID = "SIMULATOR1"

    func run() async throws {
        let folder = URL(fileURLWithPath: state)
        let authority = try TestCertificateAuthority.persistent(in: folder)
        let app = SimulatedApp(authority: authority, bundleID: bundleID, appAppleID: appAppleID, environment: environment)
        let server = VerifyReceiptServer()
        let webhook = "\(ledger)/v1/apps/\(bundleID)/notifications/apple"
        // The App Store Server API: one In-App Purchase key, kept beside the chain across restarts.
        let keyFile = folder.appendingPathComponent("api-key.p8")
        let apiKey =
            try (try? String(contentsOf: keyFile, encoding: .utf8)).map { try P256.Signing.PrivateKey(pemRepresentation: $0) }
            ?? {
                let key = P256.Signing.PrivateKey()
                try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
                return key
            }()
        let serverAPI = ServerAPISimulator()
        var twin = app
        twin.environment = environment == "Production" ? "Sandbox" : "Production"
        for known in [app, twin] {
            serverAPI.register(
                known, key: .init(issuerID: Self.issuerID, keyID: Self.keyID, publicKey: apiKey.publicKey), notificationURL: webhook)
        }
        let urls = try await server.start(port: port) { router in
            ControlAPI(app: app, server: server, serverAPI: serverAPI, webhook: webhook).register(on: router)
            serverAPI.register(on: router)
        }
        // Written straight to the descriptor: print's buffer would hold it until exit in a pipe or file.
        FileHandle.standardOutput.write(
            Data(
                """
                appstore-simulator for \(bundleID) (\(environment)) on port \(port)
                  LEDGER_APPLE_ROOT_CERTIFICATES=\(folder.appendingPathComponent("root.der").path)
                  LEDGER_APPLE_VERIFY_RECEIPT_URL=\(urls.production)
                  LEDGER_APPLE_SANDBOX_VERIFY_RECEIPT_URL=\(urls.sandbox)
                  LEDGER_APPLE_SERVER_API_URL=http://127.0.0.1:\(port)/production
                  LEDGER_APPLE_SERVER_API_SANDBOX_URL=http://127.0.0.1:\(port)/sandbox
                  App Store Server API key: issuer_id \(Self.issuerID), key_id \(Self.keyID), private_key in \(keyFile.path)
                  notifications go to \(webhook) (kept in Apple's notification history, delivered or not)

                """.utf8))
        while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// The control routes: JSON in, signed evidence or delivery statuses out.
struct ControlAPI: Sendable {
    let app: SimulatedApp
    let server: VerifyReceiptServer
    /// What Apple knows: every transaction signed here, every notification sent from here.
    let serverAPI: ServerAPISimulator
    let webhook: String

    func register(on router: Router<BasicRequestContext>) {
        router.post("/sign/transaction") { request, _ in
            let fields = try await Self.object(request)
            let transaction = try Self.transaction(fields)
            serverAPI.add([transaction], to: app)
            return try Self.json(["signed_transaction": try app.signedTransaction(transaction)])
        }
        router.post("/receipts") { request, _ in
            let fields = try await Self.object(request)
            let transactions = try (fields["transactions"] as? [[String: Any]] ?? []).map(Self.transaction)
            var app = self.app
            if let environment = fields["environment"] as? String { app.environment = environment }
            let receipt = try server.register(
                app.receiptAnswer(transactions), environment: app.environment == "Production" ? .production : .sandbox,
                sharedSecret: fields["shared_secret"] as? String)
            return try Self.json(["receipt_data": receipt])
        }
        router.post("/notify") { request, _ in
            let fields = try await Self.object(request)
            guard let type = fields["type"] as? String else { throw HTTPError(.badRequest, message: "type is required") }
            let transaction = try (fields["transaction"] as? [String: Any]).map(Self.transaction)
            let body: Data
            if (fields["version"] as? Int) == 1 {
                body = try app.notificationV1(
                    type, password: fields["password"] as? String ?? "", transactions: transaction.map { [$0] } ?? [])
            } else {
                let renewal = transaction.map {
                    SimulatedRenewal(
                        originalTransactionID: $0.originalTransactionID, productID: $0.productID,
                        autoRenewStatus: fields["auto_renew"] as? Bool ?? true)
                }
                let subtype = fields["subtype"] as? String
                body = try app.notificationV2(
                    type, subtype: subtype,
                    body: app.documentedBody(
                        for: type, subtype: subtype, transaction: transaction, renewal: renewal,
                        appTransactionID: fields["app_transaction_id"] as? String ?? "704000000000001"))
            }
            if let transaction { serverAPI.add([transaction], to: app) }
            var statuses: [Int] = []
            if (fields["version"] as? Int) == 1 {
                statuses = try await NotificationSender().deliver([body], to: webhook, redeliveries: fields["redeliveries"] as? Int ?? 0)
            } else {
                // As Apple: each attempt kept in the notification history, 0 when nothing answered.
                for _ in 0...(fields["redeliveries"] as? Int ?? 0) {
                    statuses.append(await serverAPI.send(body, of: app, transactionID: transaction?.transactionID) ?? 0)
                }
            }
            return try Self.json(["statuses": statuses])
        }
    }

    static func object(_ request: Request) async throws -> [String: Any] {
        let body = try await request.body.collect(upTo: 1 << 20)
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
            throw HTTPError(.badRequest, message: "the body must be a JSON object")
        }
        return object
    }

    static func transaction(_ fields: [String: Any]) throws -> SimulatedTransaction {
        guard let id = fields["transaction_id"] as? String, let product = fields["product_id"] as? String else {
            throw HTTPError(.badRequest, message: "transaction_id and product_id are required")
        }
        func date(_ key: String) -> Date? { (fields[key] as? String).flatMap { try? Date.ISO8601FormatStyle().parse($0) } }
        var transaction = SimulatedTransaction(
            transactionID: id, originalTransactionID: fields["original_transaction_id"] as? String, productID: product,
            type: fields["type"] as? String ?? "Auto-Renewable Subscription",
            purchaseDate: date("purchase_date") ?? Date(), expiresDate: date("expires_date"))
        if transaction.type == "Auto-Renewable Subscription", transaction.expiresDate == nil {
            transaction.expiresDate = transaction.purchaseDate.addingTimeInterval(30 * 86_400)
        }
        if let quantity = fields["quantity"] as? Int { transaction.quantity = quantity }
        if let price = fields["price"] as? Int { transaction.price = Int64(price) }
        if let currency = fields["currency"] as? String { transaction.currency = currency }
        if let token = (fields["app_account_token"] as? String).flatMap(UUID.init(uuidString:)) { transaction.appAccountToken = token }
        transaction.appTransactionID = fields["app_transaction_id"] as? String
        transaction.offerType = fields["offer_type"] as? Int
        transaction.offerIdentifier = fields["offer_id"] as? String
        if let revoked = date("revocation_date") { transaction = transaction.revoked(at: revoked) }
        return transaction
    }

    static func json(_ object: [String: Any]) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object, options: .sortedKeys))))
    }
}
