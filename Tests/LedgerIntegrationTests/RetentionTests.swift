import AppStoreSimulator
import Crypto
import Foundation
import LedgerAccess
import LedgerTestSupport
import Testing

/// Apple's realtime retention requests, signed by the simulated App Store as Apple signs them,
/// answered from the histories of users built through the public API.
@Suite(.takingTurns) struct RetentionTests {
    static let bundle = TestServer.bundleID
    static let check = OfferSignatureCheck(bundleID: TestServer.bundleID, keyID: TestServer.keyID, publicKey: TestServer.apiKey.publicKey)
    static let (trouble, loyal, yearly, fallback) = (UUID(), UUID(), UUID(), UUID())

    static func rules(offerSignature: String = "v2") -> [String: Any] {
        [
            "rules": [
                ["name": "billing-trouble", "when": ["in_billing_retry": true], "answer": ["message": trouble.uuidString]],
                [
                    "name": "loyal", "when": ["product": "pro.monthly", "paid_days_at_least": 300],
                    "answer": ["promotional_offer": ["message": loyal.uuidString, "offer": "loyal-50"]],
                ],
                [
                    "name": "monthly-to-yearly", "when": ["product": ["pro.monthly"], "renewals_at_least": 0],
                    "answer": [
                        "alternate_product": ["message": yearly.uuidString, "product": "pro.yearly", "billing_plan_type": "BILLED_UPFRONT"]
                    ],
                ],
            ],
            "default": ["message": fallback.uuidString], "offer_signature": offerSignature,
        ]
    }

    /// The app's catalogue with the offer the loyal rule names, and the rules.
    static func configure(_ server: TestServer, offerSignature: String = "v2") async throws {
        let declared = try await server.send(
            "PUT", "/v1/apps/\(bundle)/products/pro.monthly", key: server.adminKey,
            json: ["type": "auto_renewable", "entitlements": ["pro"], "offers": ["loyal-50": ["eligible": "active"]]])
        #expect(declared.status == 200, "\(declared.text)")
        let set = try await server.send(
            "PUT", "/v1/apps/\(bundle)/retention", key: server.adminKey, json: rules(offerSignature: offerSignature))
        #expect(set.status == 200, "\(set.text)")
    }

    static func buy(_ server: TestServer, _ user: String, _ id: String, days: (from: Double, to: Double), key: String) async throws {
        let transaction = SimulatedTransaction(
            transactionID: id, productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: days.from * 86_400),
            expiresDate: Date(timeIntervalSinceNow: days.to * 86_400))
        let answer = try await server.send(
            "POST", "/v1/apps/\(bundle)/transactions", key: key,
            json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(transaction)])
        #expect(answer.status == 200, "\(answer.text)")
    }

    static func ask(
        _ server: TestServer, _ original: String, app: SimulatedApp? = nil, appAppleID: Int64? = nil
    ) async throws
        -> TestServer.Answer
    {
        let body = try (app ?? server.app).realtimeRequest(
            originalTransactionID: original, productID: "pro.monthly", appAppleID: appAppleID)
        return try await server.send("POST", "/v1/apps/\(bundle)/apple/retention", body: body)
    }

    @Test func eachSubscriberIsAnsweredFromTheirHistoryAndEveryDecisionIsKept() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await Self.configure(server)
        let key = try await server.key([.ingest, .read])
        try await Self.buy(server, "devoted", "rt-1", days: (-400, 20), key: key)
        try await Self.buy(server, "newish", "rt-2", days: (-10, 20), key: key)
        try await Self.buy(server, "stuck", "rt-3", days: (-40, -2), key: key)
        var renewal = SimulatedRenewal(originalTransactionID: "rt-3", productID: "pro.monthly")
        renewal.isInBillingRetryPeriod = true
        renewal.expirationIntent = 2
        let failed = try server.app.notificationV2(
            "DID_FAIL_TO_RENEW",
            transaction: SimulatedTransaction(
                transactionID: "rt-3", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -40 * 86_400),
                expiresDate: Date(timeIntervalSinceNow: -2 * 86_400)), renewal: renewal)
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/notifications/apple", body: failed).status == 200)

        // Two years' worth of paid time: 50 % off, signed for this subscriber as StoreKit checks it.
        let devoted = try await Self.ask(server, "rt-1")
        #expect(devoted.status == 200, "\(devoted.text)")
        let offer = try #require(devoted.json["promotionalOffer"] as? [String: any Sendable], "\(devoted.text)")
        #expect(offer["messageIdentifier"] as? String == Self.loyal.uuidString.lowercased())
        let claims = try Self.check.claims(
            of: try #require(offer["promotionalOfferSignatureV2"] as? String), audience: "promotional-offer")
        #expect(claims["transactionId"] as? String == "rt-1" && claims["offerIdentifier"] as? String == "loyal-50", "\(claims)")
        #expect(devoted.json.count == 1, "exactly one member: \(devoted.text)")

        // Apple sending one request again (same id, later): answered again, recorded once.
        let decisionsBefore = try await server.eventCount(ofType: "RetentionDecided")
        let resent = try server.app.realtimeRequest(originalTransactionID: "rt-2", productID: "pro.monthly", requestID: UUID())
        for _ in 0..<2 {
            #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/apple/retention", body: resent).status == 200)
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(try await server.eventCount(ofType: "RetentionDecided") == decisionsBefore + 1, "one decision per Apple request id")

        // Ten days in: not loyal yet, so the switch to yearly.
        let newish = try await Self.ask(server, "rt-2")
        let alternate = try #require(newish.json["alternateProduct"] as? [String: any Sendable], "\(newish.text)")
        #expect(alternate["productId"] as? String == "pro.yearly" && alternate["billingPlanType"] as? String == "BILLED_UPFRONT")

        // In billing retry: say so, offer nothing.
        let stuck = try await Self.ask(server, "rt-3")
        #expect(
            (stuck.json["message"] as? [String: any Sendable])?["messageIdentifier"] as? String == Self.trouble.uuidString.lowercased(),
            "\(stuck.text)")

        // A subscription nobody here owns: only rules that need no history, so the default.
        let events = try await server.eventCount()
        let stranger = try await Self.ask(server, "999999")
        #expect(
            (stranger.json["message"] as? [String: any Sendable])?["messageIdentifier"] as? String
                == Self.fallback.uuidString.lowercased(), "\(stranger.text)")
        #expect(try await server.eventCount() == events, "no user, no fact")

        // Another app's request, or a forged one: refused, nothing recorded.
        #expect(try await Self.ask(server, "rt-1", appAppleID: 1).status == 422)
        let forger = SimulatedApp(authority: try TestCertificateAuthority(), bundleID: Self.bundle, appAppleID: 4242)
        #expect((400..<500).contains(try await Self.ask(server, "rt-1", app: forger).status))
        #expect(try await server.send("POST", "/v1/apps/\(Self.bundle)/apple/retention", body: Data("{}".utf8)).status == 400)
        #expect(try await server.eventCount() == events)

        // Each decision is the user's fact, a change on the feed, and counted per rule.
        let trail = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/devoted/events", key: key)
        let decided = (trail.json["events"] as? [[String: any Sendable]] ?? []).filter { $0["type"] as? String == "RetentionDecided" }
        #expect((decided.first?["data"] as? [String: any Sendable])?["rule"] as? String == "loyal", "\(trail.text)")
        let change = try await server.waitForChange(key: key) { change in
            change["type"] as? String == "retention.offered" && change["user_id"] as? String == "newish"
                && (change["change"] as? [String: any Sendable])?["reason"] as? String == "monthly-to-yearly"
        }
        #expect(change.found)
        // The devoted subscriber renews afterwards: the loyal rule saved one.
        let renewed = SimulatedTransaction(
            transactionID: "rt-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -400 * 86_400),
            expiresDate: Date(timeIntervalSinceNow: 20 * 86_400)
        ).renewed(transactionID: "rt-1b", period: 30 * 86_400)
        #expect(
            try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
                json: ["user_id": "devoted", "signed_transaction": try server.app.signedTransaction(renewed)]
            ).status == 200)
        let outcomes = try await server.send("GET", "/v1/apps/\(Self.bundle)/retention", key: key)
        let byRule = Dictionary(
            (outcomes.json["outcomes"] as? [[String: any Sendable]] ?? []).map { (($0["rule"] as? String) ?? "default", $0) },
            uniquingKeysWith: { first, _ in first })
        #expect(byRule["loyal"]?["shown"] as? Int == 1 && byRule["loyal"]?["saved"] as? Int == 1, "\(outcomes.text)")
        #expect(byRule["monthly-to-yearly"]?["saved"] as? Int == 0 && byRule["billing-trouble"]?["shown"] as? Int == 1, "\(outcomes.text)")
        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        let page = try await server.send("GET", "/console/apps/\(Self.bundle)", headers: [("Cookie", reader.cookie)])
        #expect(
            page.text.contains(
                "<tr><td>loyal</td><td>product pro.monthly, paid 300+ days</td><td>promotional_offer loyal-50</td><td>1</td><td>1</td></tr>"
            ),
            "\(page.text)")
        let user = try await server.send("GET", "/console/apps/\(Self.bundle)/users/newish", headers: [("Cookie", reader.cookie)])
        #expect(user.text.contains("Apple was told to show a switch to pro.yearly"), "\(user.text)")
    }

    @Test func anIneligibleOfferFallsThroughAndALegacyKeySignsV1() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await Self.configure(server, offerSignature: "v1")
        let key = try await server.key([.ingest, .read])
        // Paid long enough but lapsed: the loyal offer is for active subscribers only.
        try await Self.buy(server, "gone", "rt-9", days: (-400, -5), key: key)
        let gone = try await Self.ask(server, "rt-9")
        #expect(gone.json["alternateProduct"] != nil, "\(gone.text)")
        let trail = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/gone/events", key: key)
        #expect(trail.text.contains("the offer is for active subscribers"), "why the offer was passed over is kept")

        try await Self.buy(server, "devoted", "rt-8", days: (-400, 20), key: key)
        let devoted = try await Self.ask(server, "rt-8")
        let v1 = try #require(
            (devoted.json["promotionalOffer"] as? [String: any Sendable])?["promotionalOfferSignatureV1"] as? [String: any Sendable],
            "\(devoted.text)")
        try Self.check.checkLegacy(
            productID: "pro.monthly", offerID: "loyal-50", applicationUsername: "", nonce: try #require(v1["nonce"] as? String),
            timestamp: try #require(v1["timestamp"] as? Int64), signature: try #require(v1["encodedSignature"] as? String),
            keyIdentifier: try #require(v1["keyId"] as? String))

        // Rules naming an offer the product does not declare are refused when set.
        var bad = Self.rules()
        bad["rules"] = [
            [
                "name": "x", "when": ["product": "pro.monthly"],
                "answer": ["promotional_offer": ["message": UUID().uuidString, "offer": "nope"]],
            ]
        ]
        let refused = try await server.send("PUT", "/v1/apps/\(Self.bundle)/retention", key: server.adminKey, json: bad)
        #expect(refused.status == 400 && refused.errorCode == "invalid_retention" && refused.text.contains("nope"), "\(refused.text)")
        // An app's own PUT keeps its rules.
        try await server.configureDefaultApp()
        #expect(try await server.send("GET", "/v1/apps/\(Self.bundle)/retention", key: key).status == 200)
    }

    /// Apple's sandbox performance test, asked through the ledger, sends its signed requests to
    /// the ledger's own endpoint at Apple's concurrency: the ledger passes it.
    @Test func theLedgerPassesApplesPerformanceTest() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await Self.configure(server)
        let key = try await server.key([.ingest, .read])
        try await Self.buy(server, "devoted", "rt-p", days: (-400, 20), key: key)
        server.serverAPI.add(
            [
                SimulatedTransaction(
                    transactionID: "rt-p", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -400 * 86_400),
                    expiresDate: Date(timeIntervalSinceNow: 20 * 86_400))
            ], to: server.app)
        // The test checks Apple's protocol, not speed (a busy machine is no measure of that:
        // `ledger-bench retention` is): the threshold is generous.
        var config = ServerAPISimulator.PerformanceConfig()
        config.responseTimeThreshold = 30_000
        server.serverAPI.setPerformanceConfig(config)
        let started = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/retention/performance-test", key: server.adminKey,
            json: ["original_transaction_id": "rt-p", "realtime_url": server.baseURL + "/v1/apps/\(Self.bundle)/apple/retention"])
        #expect(started.status == 200, "\(started.text)")
        let id = try #require(started.json["request_id"] as? String)
        var result = try await server.send("GET", "/v1/apps/\(Self.bundle)/retention/performance-test/\(id)", key: key)
        for _ in 0..<600 where result.json["result"] as? String == "PENDING" {
            try await Task.sleep(for: .milliseconds(100))
            result = try await server.send("GET", "/v1/apps/\(Self.bundle)/retention/performance-test/\(id)", key: key)
        }
        #expect(result.json["result"] as? String == "PASS", "\(result.text)")
        #expect(result.json["success_rate"] as? Int == 100, "\(result.text)")
        #expect(try await server.eventCount(ofType: "RetentionDecided") == 100, "each of Apple's 100 requests is a decision")
    }

    /// A PNG of one pixel: colour type 2 (RGB), or 6 (RGBA: transparency Apple refuses).
    static func png(colourType: UInt8) -> Data {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let length = UInt32(data.count)
            return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
                + Array(type.utf8) + data + [0, 0, 0, 0]
        }
        let header: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 1, 8, colourType, 0, 0, 0]
        return Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", [0]) + chunk("IEND", []))
    }

    /// Messages and images uploaded for Apple's review through the ledger, checked against Apple's
    /// limits first; their review states listed; an approved message made a product's default.
    @Test func messagesAndImagesAreCheckedUploadedListedAndMadeDefaults() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let admin = server.adminKey
        let base = "/v1/apps/\(Self.bundle)/retention"
        let image = UUID(), message = UUID(), refused = UUID()
        let uploaded = try await server.send(
            "PUT", "\(base)/images/\(image)?size=FULL_SIZE", key: admin, body: Self.png(colourType: 2),
            headers: [("Content-Type", "image/png")])
        #expect(uploaded.status == 200, "\(uploaded.text)")
        let transparent = try await server.send(
            "PUT", "\(base)/images/\(UUID())", key: admin, body: Self.png(colourType: 6), headers: [("Content-Type", "image/png")])
        #expect(transparent.status == 400 && transparent.text.contains("transparency"), "\(transparent.text)")

        let sent = try await server.send(
            "PUT", "\(base)/messages/\(message)", key: admin,
            json: [
                "header": "Stay for 50 % off", "body": "Three months at half price, because you have been with us for two years.",
                "image": ["image_id": image.uuidString, "alt_text": "A gift"], "header_position": "ABOVE_IMAGE",
            ])
        #expect(sent.status == 200, "\(sent.text)")
        let tooLong = try await server.send(
            "PUT", "\(base)/messages/\(UUID())", key: admin, json: ["header": String(repeating: "x", count: 67), "body": "b"])
        #expect(tooLong.status == 400 && tooLong.errorCode == "invalid_retention" && tooLong.text.contains("header"), "\(tooLong.text)")
        #expect(
            server.serverAPI.seen().filter { $0.path.contains("/messaging/message/") }.count == 1, "a refused message never reaches Apple")
        let rejected = try await server.send(
            "PUT", "\(base)/messages/\(refused)", key: admin, json: ["header": "Please reject me", "body": "Nothing."])
        #expect(rejected.status == 200)

        let listed = try await server.send("GET", "\(base)/messages", key: try await server.key([.read]))
        let states = Dictionary(
            uniqueKeysWithValues: (listed.json["messages"] as? [[String: any Sendable]] ?? []).compactMap { item in
                (item["message_id"] as? String).map { ($0, item["state"] as? String ?? "") }
            })
        #expect(states == [message.uuidString.lowercased(): "APPROVED", refused.uuidString.lowercased(): "REJECTED"], "\(listed.text)")
        #expect((listed.json["images"] as? [[String: any Sendable]])?.first?["size"] as? String == "FULL_SIZE", "\(listed.text)")

        let made = try await server.send("PUT", "\(base)/defaults/pro.monthly/en-US", key: admin, json: ["message": message.uuidString])
        #expect(made.status == 200, "\(made.text)")
        #expect(server.serverAPI.defaultMessages(of: production(server)) == ["pro.monthly/en-US": message.uuidString.lowercased()])
        let notApproved = try await server.send(
            "PUT", "\(base)/defaults/pro.monthly/fr-FR", key: admin, json: ["message": refused.uuidString])
        #expect((400..<500).contains(notApproved.status), "Apple refuses a message it did not approve: \(notApproved.text)")
    }

    func production(_ server: TestServer) -> SimulatedApp {
        var app = server.app
        app.environment = "Production"
        return app
    }
}
