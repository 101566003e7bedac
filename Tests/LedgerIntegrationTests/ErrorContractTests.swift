import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import NIOHTTP1
import Testing

/// Every refusal the contract names, with its status and code, and a fuzz pass that never
/// yields a 500. Nothing refused may change anything: the event count is checked throughout.
@Suite(.takingTurns) struct ErrorContractTests {
    static let bundle = TestServer.bundleID
    static let purchase = SimulatedTransaction(
        transactionID: "e-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
        expiresDate: Date(timeIntervalSinceNow: 86_400))

    func events(_ server: TestServer) async throws -> Int {
        try await server.pool.withConnection { try $0.query("SELECT count(*) FROM ledger.events")[0][0].int() }
    }

    @Test func keysAreRequiredScopedAndLimitedToTheirApp() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let path = "/v1/apps/\(Self.bundle)/users/u1"
        #expect(try await server.send("GET", path).errorCode == "missing_api_key")
        #expect(try await server.send("GET", path).status == 401)
        #expect(try await server.send("GET", path, key: "lk_unknown").errorCode == "invalid_api_key")
        #expect(try await server.send("GET", path, headers: [("Authorization", "Basic abc")]).status == 401)
        let ingestOnly = try await server.key([.ingest])
        let forbidden = try await server.send("GET", path, key: ingestOnly)
        #expect(forbidden.status == 403 && forbidden.errorCode == "insufficient_scope")
        let otherApp = try await server.key([.read], app: "com.example.other")
        let wrongApp = try await server.send("GET", path, key: otherApp)
        #expect(wrongApp.status == 403 && wrongApp.errorCode == "app_not_allowed")
        let reader = try await server.key([.read], app: Self.bundle)
        #expect(try await server.send("GET", path, key: reader).status == 200)
        #expect(try await server.send("PUT", "/v1/apps/\(Self.bundle)", key: reader, json: [:]).status == 403)
        #expect(try await server.send("GET", "/v1/apps/\(Self.bundle)/exports/transactions", key: reader).status == 403)
        #expect(try await server.keys.revoke(String(reader.prefix(10))) == 1)
        #expect(try await server.send("GET", path, key: reader).errorCode == "invalid_api_key", "a revoked key stops working")
    }

    @Test func unknownAppsMalformedBodiesAndBadParametersAreClearErrors() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.read, .ingest])
        let before = try await events(server)
        let unknown = try await server.send("GET", "/v1/apps/com.nobody/users/u1", key: key)
        #expect(unknown.status == 404 && unknown.errorCode == "unknown_app")
        let transactions = "/v1/apps/\(Self.bundle)/transactions"
        #expect(try await server.send("POST", transactions, key: key, body: Data("{not json".utf8)).errorCode == "malformed_json")
        #expect(try await server.send("POST", transactions, key: key, body: Data("[1,2]".utf8)).errorCode == "malformed_json")
        let missing = try await server.send("POST", transactions, key: key, json: ["user_id": "u1"])
        #expect(missing.status == 400 && missing.errorCode == "invalid_body" && missing.text.contains("signed_transaction"))
        let wrongType = try await server.send("POST", transactions, key: key, json: ["user_id": 5, "signed_transaction": "x"])
        #expect(wrongType.status == 400 && wrongType.errorCode == "invalid_body")
        let receipt = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/receipts", key: key, json: ["user_id": "u1", "receipt_data": "%%%"])
        #expect(receipt.status == 400 && receipt.errorCode == "malformed_evidence")
        // A user id carrying the separators the ledger joins ids with is refused, not split.
        let forged = try await server.send(
            "POST", transactions, key: key, json: ["user_id": "alice\u{1E}\(Self.bundle)\u{1F}bob", "signed_transaction": "x"])
        #expect(forged.status == 400 && forged.errorCode == "invalid_user_id", "\(forged.text)")
        let badTime = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/u1?at=yesterday", key: key)
        #expect(badTime.status == 400 && badTime.errorCode == "invalid_time")
        // A plain date is that day's midnight UTC; a date that does not exist is refused.
        let day = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/u1?at=2026-10-01", key: key)
        #expect(day.status == 200 && day.json["as_of"] as? String == "2026-10-01T00:00:00.000Z", "\(day.text)")
        let noDay = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/u1?at=2026-02-30", key: key)
        #expect(noDay.status == 400 && noDay.errorCode == "invalid_time")
        let finance = try await server.key([.finance])
        let month = try await server.send("GET", "/v1/apps/\(Self.bundle)/exports/transactions?from=2026-10-01&to=2026-11-01", key: finance)
        #expect(month.status == 200, "\(month.text)")
        let backwards = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/exports/transactions?from=2026-11-01&to=2026-10-01", key: finance)
        #expect(backwards.status == 400 && backwards.errorCode == "invalid_time")
        let badLimit = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/u1/events?limit=0", key: key)
        #expect(badLimit.status == 400 && badLimit.errorCode == "invalid_limit")
        let negative = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/u1/consumptions", key: key,
            json: ["currency": "coins", "amount": -5, "idempotency_key": "x"])
        #expect(negative.status == 400 && negative.errorCode == "invalid_amount")
        let badProduct = try await server.send("PUT", "/v1/apps/\(Self.bundle)/products/p", key: server.adminKey, json: ["type": "gizmo"])
        #expect(badProduct.status == 400 && badProduct.errorCode == "invalid_product_type")
        let noDuration = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/products/p", key: server.adminKey, json: ["type": "non_renewing"])
        #expect(noDuration.errorCode == "invalid_duration")
        // Control characters in the catalogue's names (a NUL cannot even be stored): refused, not a 500.
        for name in ["pro\u{0}", "pro\u{1}x", "a\u{7F}"] {
            let entitlement = try await server.send(
                "PUT", "/v1/apps/\(Self.bundle)/products/p", key: server.adminKey,
                json: ["type": "non_consumable", "entitlements": [name]])
            #expect(entitlement.status == 400 && entitlement.errorCode == "invalid_entitlements", "\(entitlement.text)")
            let currency = try await server.send(
                "PUT", "/v1/apps/\(Self.bundle)/products/p", key: server.adminKey,
                json: ["type": "consumable", "grants": [name: 5]])
            #expect(currency.status == 400 && currency.errorCode == "invalid_grants", "\(currency.text)")
        }
        let badEnvironment = try await server.send(
            "PUT", "/v1/apps/com.x", key: server.adminKey, json: ["environments": ["Production", "Xcode"]])
        #expect(badEnvironment.errorCode == "invalid_environment")
        #expect(try await server.send("GET", "/v1/nothing/here", key: key).status == 404)
        #expect(try await events(server) == before, "no refusal recorded anything")
    }

    @Test func oversizedBodiesAre413() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest])
        let huge =
            Data(#"{"user_id": "u", "signed_transaction": ""#.utf8) + Data(repeating: UInt8(ascii: "a"), count: 1 << 20) + Data(#""}"#.utf8)
        let answer = try await server.send("POST", "/v1/apps/\(Self.bundle)/transactions", key: key, body: huge)
        #expect(answer.status == 413 && answer.errorCode == "body_too_large")
        let webhook = try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: huge)
        #expect(webhook.status == 413)
    }

    @Test func evidenceThatFailsVerificationIs422AndRecordsNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest])
        let before = try await events(server)
        let path = "/v1/apps/\(Self.bundle)/transactions"
        let stranger = SimulatedApp(authority: try TestCertificateAuthority(), bundleID: Self.bundle)
        let forged = try await server.send(
            "POST", path, key: key, json: ["user_id": "u", "signed_transaction": try stranger.signedTransaction(Self.purchase)])
        #expect(forged.status == 422 && forged.errorCode == "untrusted_chain")
        let jws = try server.app.signedTransaction(Self.purchase)
        var parts = jws.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        let tampered = try await server.send(
            "POST", path, key: key, json: ["user_id": "u", "signed_transaction": parts.joined(separator: ".")])
        #expect(tampered.status == 422 || tampered.status == 400, "\(tampered.text)")
        let otherApp = SimulatedApp(authority: TestServer.authority, bundleID: "com.example.other")
        let wrongBundle = try await server.send(
            "POST", path, key: key, json: ["user_id": "u", "signed_transaction": try otherApp.signedTransaction(Self.purchase)])
        #expect(wrongBundle.status == 422 && wrongBundle.errorCode == "bundle_mismatch")
        let garbage = try await server.send("POST", path, key: key, json: ["user_id": "u", "signed_transaction": "a.b.c"])
        #expect(garbage.status == 400 && garbage.errorCode == "malformed_evidence")
        // Apple's webhook: forged or for another app is 4xx (Apple should not retry it).
        let webhook = "/v1/apps/\(Self.bundle)/notifications/apple"
        let forgedNotification = try await server.send("POST", webhook, body: try stranger.notificationV2("TEST"))
        #expect(forgedNotification.status == 422)
        let wrongPassword = try await server.send(
            "POST", webhook, body: try server.app.notificationV1("DID_RENEW", password: "guess", transactions: [Self.purchase]))
        #expect(wrongPassword.status == 422 && wrongPassword.errorCode == "shared_secret_mismatch")
        let unknownApp = try await server.send(
            "POST", "/v1/apps/com.nobody/notifications/apple", body: try server.app.notificationV2("TEST"))
        #expect(unknownApp.status == 404)
        #expect(try await events(server) == before)
        let test = try server.app.notificationV2("TEST")
        #expect(try await server.send("POST", webhook, body: test).json["status"] as? String == "recorded")
        #expect(
            try await server.send("POST", webhook, body: test).json["status"] as? String == "already_recorded",
            "deduplicated by notificationUUID")
        let v1 = try await server.send(
            "POST", webhook, body: try server.app.notificationV1("DID_RENEW", password: "s3cret", transactions: [Self.purchase]))
        #expect(v1.status == 200 && v1.json["status"] as? String == "recorded", "\(v1.text)")
        let stored = try await server.pool.query(
            "SELECT convert_from(body, 'UTF8') AS b FROM ledger.evidence WHERE kind = 'notification_v1'")
        #expect(stored.count == 1 && !(stored.first?["b"].text ?? "s3cret").contains("s3cret"), "the V1 password is never stored")
    }

    @Test func appleBeingUnavailableIs503WithRetryAfter() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest])
        server.apple.script(.production, Array(repeating: .status(21009), count: 5))
        let receipt = try server.apple.register(server.app.receiptAnswer([Self.purchase]), environment: .sandbox, sharedSecret: "s3cret")
        let answer = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/receipts", key: key, json: ["user_id": "u", "receipt_data": receipt])
        #expect(answer.status == 503 && answer.errorCode == "apple_unavailable")
        #expect(answer.headers.first(name: "Retry-After") == "5")
        let invalid = try server.apple.register(server.app.receiptAnswer([Self.purchase]), environment: .production, sharedSecret: "other")
        let refused = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/receipts", key: key, json: ["user_id": "u", "receipt_data": invalid])
        #expect(refused.status == 422 && refused.errorCode == "shared_secret_mismatch")
    }

    @Test func fuzzedBodiesNeverYieldA500() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.admin])
        let routes = [
            ("POST", "/v1/apps/\(Self.bundle)/transactions"), ("POST", "/v1/apps/\(Self.bundle)/receipts"),
            ("POST", "/v1/apps/\(Self.bundle)/users/f/consumptions"), ("POST", "/v1/apps/\(Self.bundle)/users/f/grants"),
            ("PUT", "/v1/apps/\(Self.bundle)/products/fz"), ("PUT", "/v1/apps/com.fuzz"),
            ("POST", "/v1/apps/\(Self.bundle)/notifications/apple"),
        ]
        let seeds: [String] = [
            "", "{}", "null", "[]", "\"x\"", "{\"user_id\": null}", "{\"signedPayload\": \"a.b.c\"}",
            "{\"signedPayload\": 1}", "{\"notification_type\": \"X\", \"password\": 3}", "{\"amount\": 1e308}",
            "{\"currency\": \"c\", \"amount\": 9223372036854775807, \"idempotency_key\": \"k\"}",
            "{\"type\": \"consumable\", \"grants\": {\"\": 1}}", "{\"environments\": [1]}", "\u{0}\u{1}\u{2}",
            "{\"user_id\": \"\(String(repeating: "x", count: 400))\", \"signed_transaction\": \"a\"}",
        ]
        var generator = SystemRandomNumberGenerator()
        var bodies = seeds.map { Data($0.utf8) }
        for _ in 0..<60 {
            var bytes = Array(seeds.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            bodies.append(Data(bytes))
        }
        for (method, path) in routes {
            for body in bodies {
                let answer = try await server.send(method, path, key: key, body: body)
                #expect(
                    answer.status < 500, "\(method) \(path) with \(String(decoding: body, as: UTF8.self)) → \(answer.status) \(answer.text)"
                )
                if answer.status >= 400 { #expect(answer.errorCode != nil, "every error has the error shape: \(answer.text)") }
            }
        }
    }
}
