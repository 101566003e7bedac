import AppStoreSimulator
import Crypto
import Foundation
import LedgerAccess
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Offers signed by the ledger for the users its history makes eligible, checked as StoreKit
/// checks them (the simulator's `OfferSignatureCheck`, with the app's key), and each one kept.
@Suite(.takingTurns) struct OfferTests {
    static let bundle = TestServer.bundleID
    static let check = OfferSignatureCheck(bundleID: TestServer.bundleID, keyID: TestServer.keyID, publicKey: TestServer.apiKey.publicKey)

    func buy(
        _ server: TestServer, _ user: String, _ id: String, product: String = "pro.monthly", days: (from: Double, to: Double),
        token: UUID? = nil, key: String
    ) async throws {
        var transaction = SimulatedTransaction(
            transactionID: id, productID: product, purchaseDate: Date(timeIntervalSinceNow: days.from * 86_400),
            expiresDate: product == "pro.monthly" ? Date(timeIntervalSinceNow: days.to * 86_400) : nil)
        if product != "pro.monthly" { transaction.type = "Consumable" }
        transaction.appAccountToken = token
        let answer = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": user, "signed_transaction": try server.app.signedTransaction(transaction)])
        #expect(answer.status == 200, "\(answer.text)")
    }

    func sign(_ server: TestServer, _ user: String, offer: String, format: String = "jws", key: String) async throws -> TestServer.Answer {
        try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/\(user)/offers/sign", key: key,
            json: ["product_id": "pro.monthly", "offer_id": offer, "format": format])
    }

    @Test func eachOfferGoesToWhomItsRuleNamesSignedAsStoreKitWantsAndKept() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let declared = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/products/pro.monthly", key: server.adminKey,
            json: [
                "type": "auto_renewable", "entitlements": ["pro"],
                "offers": [
                    "winback-50": ["eligible": "lapsed", "lapsed_for": "P30D"], "loyal-20": ["eligible": "active"],
                    "welcome": ["eligible": "new"], "everyone": ["eligible": "anyone"],
                ],
            ])
        #expect(declared.status == 200 && (declared.json["offers"] as? [String: any Sendable])?.count == 4, "\(declared.text)")
        let key = try await server.key([.ingest, .read])
        let token = UUID()
        try await buy(server, "lapsed-long", "of-1", days: (-90, -40), token: token, key: key)
        try await buy(server, "lapsed-short", "of-2", days: (-40, -10), key: key)
        try await buy(server, "subscriber", "of-3", days: (-5, 25), key: key)

        let winback = try await sign(server, "lapsed-long", offer: "winback-50", key: key)
        #expect(winback.status == 200, "\(winback.text)")
        let claims = try Self.check.claims(of: try #require(winback.json["signature"] as? String), audience: "promotional-offer")
        #expect(claims["productId"] as? String == "pro.monthly" && claims["offerIdentifier"] as? String == "winback-50")
        #expect(claims["transactionId"] as? String == "of-1", "the user's latest purchase of the product")

        let tooSoon = try await sign(server, "lapsed-short", offer: "winback-50", key: key)
        #expect(tooSoon.status == 409 && tooSoon.errorCode == "not_eligible" && tooSoon.text.contains("eligible from"), "\(tooSoon.text)")
        #expect(try await sign(server, "subscriber", offer: "winback-50", key: key).errorCode == "not_eligible")
        #expect(try await sign(server, "subscriber", offer: "loyal-20", key: key).status == 200)
        #expect(try await sign(server, "lapsed-long", offer: "loyal-20", key: key).errorCode == "not_eligible")
        #expect(try await sign(server, "newcomer", offer: "welcome", key: key).status == 200)
        #expect(try await sign(server, "subscriber", offer: "welcome", key: key).errorCode == "not_eligible")
        #expect(try await sign(server, "anybody", offer: "everyone", key: key).status == 200)

        // The legacy SKPaymentDiscount signature, over the user's appAccountToken.
        let legacy = try await sign(server, "lapsed-long", offer: "winback-50", format: "legacy", key: key)
        #expect(legacy.status == 200, "\(legacy.text)")
        let username = try #require(legacy.json["application_username"] as? String)
        #expect(username == token.uuidString.lowercased())
        try Self.check.checkLegacy(
            productID: "pro.monthly", offerID: "winback-50", applicationUsername: username,
            nonce: try #require(legacy.json["nonce"] as? String), timestamp: try #require(legacy.json["timestamp"] as? Int64),
            signature: try #require(legacy.json["signature"] as? String), keyIdentifier: try #require(legacy.json["key_id"] as? String))

        // Clear refusals.
        #expect(try await sign(server, "lapsed-long", offer: "nope", key: key).errorCode == "unknown_offer")
        let unknownProduct = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/u/offers/sign", key: key, json: ["product_id": "gold", "offer_id": "x"])
        #expect(unknownProduct.status == 404 && unknownProduct.errorCode == "unknown_product")
        #expect(try await sign(server, "lapsed-long", offer: "winback-50", format: "pdf", key: key).errorCode == "invalid_format")
        let badRule = try await server.send(
            "PUT", "/v1/apps/\(Self.bundle)/products/pro.monthly", key: server.adminKey,
            json: [
                "type": "auto_renewable", "entitlements": ["pro"], "offers": ["x": ["eligible": "sometimes"]],
            ])
        #expect(badRule.status == 400 && badRule.errorCode == "invalid_offer")

        // Every signature issued is kept in the user's trail; refusals are not.
        let signed = try await server.eventCount(ofType: "OfferSigned")
        #expect(signed == 5, "five signed, four refused")
        let trail = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/lapsed-long/events", key: key)
        #expect(trail.text.contains("OfferSigned"), "\(trail.text.prefix(500))")
    }

    @Test func introductoryEligibilityIsDecidedAcrossAppleAccounts() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        func ask(_ user: String, transaction: String? = nil) async throws -> TestServer.Answer {
            var body: [String: Any] = ["product_id": "pro.monthly"]
            body["transaction_id"] = transaction
            return try await server.send(
                "POST", "/v1/apps/\(Self.bundle)/users/\(user)/offers/introductory-eligibility", key: key, json: body)
        }
        try await buy(server, "veteran", "ie-1", days: (-400, -370), key: key) // held pro, long ago
        try await buy(server, "coin-buyer", "ie-2", product: "coins.100", days: (-1, 0), key: key)
        let veteran = try await ask("veteran")
        #expect(veteran.status == 200 && veteran.json["eligible"] as? Bool == false, "\(veteran.text)")
        let said = try Self.check.claims(of: try #require(veteran.json["signature"] as? String), audience: "introductory-offer-eligibility")
        #expect(said["allowIntroductoryOffer"] as? Bool == false && said["transactionId"] as? String == "ie-1")
        let fresh = try await ask("coin-buyer")
        #expect(fresh.json["eligible"] as? Bool == true)
        #expect(
            try Self.check.claims(of: try #require(fresh.json["signature"] as? String), audience: "introductory-offer-eligibility")[
                "transactionId"] as? String
                == "ie-2")
        let stranger = try await ask("stranger")
        #expect(stranger.status == 400 && stranger.errorCode == "missing_transaction_id", "\(stranger.text)")
        #expect(try await ask("stranger", transaction: "2000000999").json["eligible"] as? Bool == true)
        #expect(try await ask("stranger", transaction: "1 OR 1=1").errorCode == "invalid_transaction_id")
    }

    @Test func anAppWithoutAnInAppPurchaseKeyCannotSign() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let other = "com.example.nokey"
        #expect(try await server.send("PUT", "/v1/apps/\(other)", key: server.adminKey, json: ["environments": ["Sandbox"]]).status == 200)
        #expect(
            try await server.send(
                "PUT", "/v1/apps/\(other)/products/pro.monthly", key: server.adminKey,
                json: [
                    "type": "auto_renewable", "entitlements": ["pro"], "offers": ["welcome": ["eligible": "new"]],
                ]
            ).status == 200)
        let answer = try await server.send(
            "POST", "/v1/apps/\(other)/users/u/offers/sign", key: server.adminKey,
            json: ["product_id": "pro.monthly", "offer_id": "welcome"])
        #expect(answer.status == 422 && answer.errorCode == "app_store_server_api_not_configured", "\(answer.text)")
    }
}
