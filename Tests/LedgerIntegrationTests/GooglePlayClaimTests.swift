import AppStoreSimulator
import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerAccess
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import NIOHTTP1
import Testing

/// Google Play purchases through the public API, the Google Play simulator standing in for
/// Google: the app posts a token, the ledger asks Google, records what Google says beside the
/// user's Apple purchases, and acknowledges what Google must hear of within three days.
@Suite(.takingTurns) struct GooglePlayClaimTests {
    static let bundle = TestServer.bundleID
    static let package = TestServer.packageName

    static func claim(_ server: TestServer, user: String, product: String, token: String, key: String) async throws -> TestServer.Answer {
        try await server.send(
            "POST", "/v1/apps/\(bundle)/google/purchases", key: key,
            json: ["user_id": user, "product_id": product, "purchase_token": token])
    }

    static func entitlement(_ answer: TestServer.Answer, _ name: String) -> [String: any Sendable]? {
        (answer.json["entitlements"] as? [String: any Sendable])?[name] as? [String: any Sendable]
    }

    static func active(_ answer: TestServer.Answer, _ name: String) -> Bool { entitlement(answer, name)?["active"] as? Bool == true }

    @Test func aSubscriptionIsVerifiedWithGoogleOwnedBesideApplesPurchasesAndAcknowledgedOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro")

        let claimed = try await Self.claim(server, user: "gina", product: "pro", token: token, key: key)
        #expect(claimed.status == 200, "\(claimed.text)")
        #expect(Self.active(claimed, "pro"), "\(claimed.text)")
        let subscription = (claimed.json["subscriptions"] as? [[String: any Sendable]])?.first
        #expect(subscription?["store"] as? String == "google_play")
        #expect((subscription?["original_transaction_id"] as? String)?.hasPrefix("gp:") == true)
        #expect(subscription?["original_transaction_id"] as? String == GooglePurchaseKey.of(token: token))

        #expect(try await eventually { server.google.subscription(token)?.acknowledged == true }, "Google was never told")
        // Presented again: nothing new recorded, and Google is not told twice.
        let events = try await server.eventCount()
        let again = try await Self.claim(server, user: "gina", product: "pro", token: token, key: key)
        #expect(again.status == 200 && Self.active(again, "pro"))
        #expect(try await server.eventCount() == events)
        try await Task.sleep(for: .seconds(2))
        let acknowledgements = server.google.seen().filter { $0.path.hasSuffix(":acknowledge") }
        #expect(acknowledgements.map(\.status) == [200], "\(acknowledgements)")

        // The same user's Apple purchase sits beside it.
        let apple = try server.app.signedTransaction(IngestionFlowTests.subscription("gina-apple-1"))
        let both = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "gina", "signed_transaction": apple])
        let stores = (both.json["subscriptions"] as? [[String: any Sendable]] ?? []).compactMap { $0["store"] as? String }
        #expect(Set(stores) == ["app_store", "google_play"], "\(both.text)")
    }

    @Test func theLifecycleAsGoogleStatesItGrantsWhatEachStateGrants() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        // Bought three hours ago for two-hour periods, renewed when the first ended: Google's
        // states come in their own time, so each order's period is where it really was.
        let start = Date().addingTimeInterval(-3 * 3600)
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro", period: 2 * 3600, now: start)
        func state() async throws -> TestServer.Answer { try await Self.claim(server, user: "lee", product: "pro", token: token, key: key) }

        #expect(!Self.active(try await state(), "pro"), "the first period ended an hour ago")
        server.google.change(token, .renew, now: start.addingTimeInterval(2 * 3600))
        #expect(Self.active(try await state(), "pro"))
        server.google.change(token, .enterGracePeriod)
        #expect(Self.active(try await state(), "pro"), "a grace period keeps access")
        server.google.change(token, .hold)
        #expect(!Self.active(try await state(), "pro"), "account hold takes it away")
        server.google.change(token, .recover)
        #expect(Self.active(try await state(), "pro"), "a recovery gives it back")
        server.google.change(token, .pause(until: Date().addingTimeInterval(86_400)))
        #expect(!Self.active(try await state(), "pro"), "a paused subscription grants nothing")
        server.google.change(token, .recover)
        server.google.change(token, .cancel)
        let canceled = try await state()
        #expect(Self.active(canceled, "pro"), "a cancelled subscription runs to its expiry")
        #expect(Self.entitlement(canceled, "pro")?["will_renew"] as? Bool == false)
        server.google.change(token, .restart)
        #expect(Self.entitlement(try await state(), "pro")?["will_renew"] as? Bool == true)
        server.google.change(token, .revoke)
        #expect(!Self.active(try await state(), "pro"), "a revocation ends it at once")

        // Each period at its instant (valid time): the first order's, and none before the purchase.
        let during = RFC3339.string(start.addingTimeInterval(3600))
        #expect(Self.active(try await server.send("GET", "/v1/apps/\(Self.bundle)/users/lee?at=\(during)", key: key), "pro"))
        let before = RFC3339.string(start.addingTimeInterval(-60))
        #expect(!Self.active(try await server.send("GET", "/v1/apps/\(Self.bundle)/users/lee?at=\(before)", key: key), "pro"))
    }

    @Test func anUpgradeEndsTheOldTokenForGoodInWhicheverOrderTheTokensArrive() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        for newFirst in [false, true] {
            let user = newFirst ? "up-new-first" : "up-old-first"
            let old = server.google.purchaseSubscription(package: Self.package, productID: "pro", now: Date().addingTimeInterval(-60))
            if !newFirst { #expect(Self.active(try await Self.claim(server, user: user, product: "pro", token: old, key: key), "pro")) }
            let new = try #require(server.google.upgrade(old, to: "pro"))
            let upgraded = try await Self.claim(server, user: user, product: "pro", token: new, key: key)
            #expect(upgraded.status == 200 && Self.active(upgraded, "pro"), "\(upgraded.text)")
            if !newFirst {
                // The old purchase was recorded active for a month; the new one's link alone ends it.
                let oldOne = (upgraded.json["subscriptions"] as? [[String: any Sendable]] ?? []).first {
                    $0["original_transaction_id"] as? String == GooglePurchaseKey.of(token: old)
                }
                #expect(oldOne?["status"] as? String == "revoked", "\(upgraded.text)")
            }
            // The old token presented afterwards (a stale client): recorded, and never entitled again.
            let stale = try await Self.claim(server, user: user, product: "pro", token: old, key: key)
            #expect(stale.status == 200, "\(stale.text)")
            let subscriptions = stale.json["subscriptions"] as? [[String: any Sendable]] ?? []
            let oldKey = GooglePurchaseKey.of(token: old)
            let oldOne = subscriptions.first { $0["original_transaction_id"] as? String == oldKey }
            #expect(oldOne?["status"] as? String != "active", "the replaced purchase: \(stale.text)")
            let newOne = subscriptions.first { $0["original_transaction_id"] as? String == GooglePurchaseKey.of(token: new) }
            #expect(newOne?["status"] as? String == "active", "\(stale.text)")
            #expect(Self.active(stale, "pro"))
        }
    }

    @Test func aConsumableGrantsItsCurrencyAndIsConsumedWithGoogle() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseProduct(package: Self.package, productID: "coins_500", quantity: 2)
        let claimed = try await Self.claim(server, user: "cory", product: "coins_500", token: token, key: key)
        #expect(claimed.status == 200, "\(claimed.text)")
        #expect((claimed.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 1000, "\(claimed.text)")
        #expect(try await eventually { server.google.product(token)?.consumed == true }, "never consumed")
        let purchase = (claimed.json["purchases"] as? [[String: any Sendable]])?.first
        #expect(purchase?["store"] as? String == "google_play")

        // A non-consumable is acknowledged, not consumed.
        let ads = server.google.purchaseProduct(package: Self.package, productID: "remove_ads")
        #expect(Self.active(try await Self.claim(server, user: "cory", product: "remove_ads", token: ads, key: key), "no_ads"))
        #expect(try await eventually { server.google.product(ads)?.acknowledged == true })
        #expect(server.google.product(ads)?.consumed == false)
    }

    @Test func aPendingPurchaseGrantsNothingUntilGoogleSaysItIsPaid() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseProduct(package: Self.package, productID: "remove_ads", pending: true)
        let pending = try await Self.claim(server, user: "pat", product: "remove_ads", token: token, key: key)
        #expect(pending.status == 200 && !Self.active(pending, "no_ads"), "\(pending.text)")
        try await Task.sleep(for: .seconds(2))
        #expect(server.google.product(token)?.acknowledged == false, "a pending purchase cannot be acknowledged")
        server.google.settlePendingProduct(token, paid: true)
        let paid = try await Self.claim(server, user: "pat", product: "remove_ads", token: token, key: key)
        #expect(Self.active(paid, "no_ads"), "\(paid.text)")
        #expect(try await eventually { server.google.product(token)?.acknowledged == true })
    }

    @Test func acknowledgementOutlastsGooglesFailures() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        // Google's 5xx on every attempt within the client's own retries, twice over: the outbox retries later.
        server.google.inject(.init(status: 503, pathContains: ":acknowledge", times: 8))
        #expect(try await Self.claim(server, user: "rita", product: "pro", token: token, key: key).status == 200)
        // The outbox's row is settled once Google's answer is back, after Google has marked the
        // purchase and listed the call: waited for as the last event of the three.
        var settled = false
        for _ in 0..<1200 where !settled {
            settled = try await server.pool.query("SELECT settled_at IS NOT NULL AS done FROM ledger.google_purchases")
                .allSatisfy { try $0["done"].bool() }
            if !settled { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(settled, "the outbox's row was never settled")
        #expect(server.google.subscription(token)?.acknowledged == true, "never acknowledged")
        let accepted = server.google.seen().filter { $0.path.hasSuffix(":acknowledge") && $0.status == 200 }
        #expect(accepted.count == 1)
    }

    @Test func whatGoogleRefusesOrTheAppHasNotSetUpIsAClearErrorAndRecordsNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        let unconfigured = try await Self.claim(server, user: "eve", product: "pro", token: token, key: key)
        #expect(unconfigured.status == 422 && unconfigured.errorCode == "google_play_not_configured", "\(unconfigured.text)")

        try await server.configureGoogle()
        let events = try await server.eventCount()
        let cases: [(product: String, token: String, status: Int, code: String)] = [
            ("pro", "no-such-token", 404, "google_purchase_not_found"),
            ("pro_yearly", token, 422, "product_mismatch"),
            ("not_in_catalogue", token, 404, "unknown_product"),
            ("pro", "bad token with spaces", 400, "invalid_purchase_token"),
            ("pro", server.google.purchaseSubscription(package: "com.other.app", productID: "pro"), 422, "package_mismatch"),
            (
                "pro", server.google.purchaseSubscription(package: Self.package, productID: "pro", test: true), 422,
                "environment_not_allowed"
            ),
        ]
        for (product, given, status, code) in cases {
            let answer = try await Self.claim(server, user: "eve", product: product, token: given, key: key)
            #expect(answer.status == status && answer.errorCode == code, "\(product): \(answer.text)")
        }
        // Google away: 503 with Retry-After, nothing recorded.
        server.google.inject(.init(status: 503, pathContains: "subscriptionsv2", times: 50))
        let away = try await Self.claim(server, user: "eve", product: "pro", token: token, key: key)
        #expect(away.status == 503 && away.headers.first(name: "Retry-After") != nil, "\(away.text)")
        #expect(try await server.eventCount() == events)

        // The app's settings answer back without the key, with the account's email.
        let app = try await server.send("GET", "/v1/apps/\(Self.bundle)", key: server.adminKey)
        let google = app.json["google_play"] as? [String: any Sendable]
        #expect(google?["package_name"] as? String == Self.package)
        #expect(google?["service_account"] == nil && google?["service_account_email"] as? String == TestServer.googleAccount.email)
        #expect(!app.text.contains("PRIVATE KEY"))
    }

    @Test func anotherUserPresentingATokenIsDecidedByTheRestorePolicy() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        // transfer (the default): the newcomer owns it, the first user no more.
        let moved = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        #expect(Self.active(try await Self.claim(server, user: "first", product: "pro", token: moved, key: key), "pro"))
        #expect(Self.active(try await Self.claim(server, user: "second", product: "pro", token: moved, key: key), "pro"))
        let first = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/first", key: key)
        #expect(!Self.active(first, "pro"), "\(first.text)")
        // keep: the newcomer is refused, without learning who owns it.
        let settings = try await server.send("GET", "/v1/apps/\(Self.bundle)", key: server.adminKey).json
        var body: [String: Any] = ["environments": settings["environments"] ?? ["Production", "Sandbox"], "restore_policy": "keep"]
        body["google_play"] = ["package_name": Self.package, "test_purchases": false]
        #expect(try await server.send("PUT", "/v1/apps/\(Self.bundle)", key: server.adminKey, json: body).status == 200)
        let kept = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        #expect(try await Self.claim(server, user: "third", product: "pro", token: kept, key: key).status == 200)
        let refused = try await Self.claim(server, user: "fourth", product: "pro", token: kept, key: key)
        #expect(refused.status == 409 && refused.errorCode == "transaction_owned_by_another_user", "\(refused.text)")
        #expect(!refused.text.contains("third"))
    }

    @Test func subjectAccessShowsTheTokensAndErasureForgetsThemAndGooglesAnswers() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro", accountID: "acct-erin-7")
        let coins = server.google.purchaseProduct(package: Self.package, productID: "coins_500", accountID: "acct-erin-7")
        #expect(try await Self.claim(server, user: "erin", product: "pro", token: token, key: key).status == 200)
        #expect(try await Self.claim(server, user: "erin", product: "coins_500", token: coins, key: key).status == 200)

        let export = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin/export", key: server.adminKey)
        let held = export.json["google_play_purchases"] as? [[String: any Sendable]] ?? []
        #expect(Set(held.compactMap { $0["purchase_token"] as? String }) == [token, coins], "\(export.text.prefix(2000))")
        #expect(export.text.contains("acct-erin-7"), "Google's answers, as evidence")

        let erased = try await server.send("DELETE", "/v1/apps/\(Self.bundle)/users/erin", key: server.adminKey)
        #expect(erased.status == 200, "\(erased.text)")
        let tokens = try await server.pool.query("SELECT count(*) AS n FROM ledger.google_purchases")[0]["n"].int()
        #expect(tokens == 0, "the purchase tokens are forgotten")
        let kept = try await server.pool.query(
            "SELECT count(*) AS n FROM ledger.evidence WHERE kind LIKE 'google_%' AND shredded_at IS NULL")[0]["n"].int()
        #expect(kept == 0, "Google's answers are emptied")
        let dump = try await server.pool.query(
            "SELECT count(*) AS n FROM ledger.evidence WHERE convert_from(body, 'UTF8') LIKE '%acct-erin-7%'")
        #expect(try dump[0]["n"].int() == 0)
    }
}
