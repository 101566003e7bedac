import AppStoreSimulator
import Foundation
import GooglePlay
import GooglePlaySimulator
import LedgerAccess
import LedgerReconciliation
import LedgerServer
import LedgerTestSupport
import Testing

/// Google Play where support and operators meet it: what no push told found again by a user's
/// sync and by `reconcile`, counted in the metrics by store, shown decoded in the console, and
/// one user's purchases from both stores moved together by a merge.
@Suite(.takingTurns) struct GooglePlayOperationsTests {
    static let bundle = TestServer.bundleID
    static let package = TestServer.packageName

    static func claim(_ server: TestServer, _ user: String, _ product: String, _ token: String, key: String) async throws {
        let answer = try await server.send(
            "POST", "/v1/apps/\(bundle)/google/purchases", key: key,
            json: ["user_id": user, "product_id": product, "purchase_token": token])
        #expect(answer.status == 200, "\(answer.text)")
    }

    static func subscriptions(_ answer: TestServer.Answer) -> [[String: any Sendable]] {
        answer.json["subscriptions"] as? [[String: any Sendable]] ?? []
    }

    static func active(_ answer: TestServer.Answer, _ name: String) -> Bool {
        ((answer.json["entitlements"] as? [String: any Sendable])?[name] as? [String: any Sendable])?["active"] as? Bool == true
    }

    @Test func whatNoPushToldIsFoundBySyncAndByReconcileAndCountedByStore() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let nia = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        let oli = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        let pat = server.google.purchaseSubscription(package: Self.package, productID: "pro")
        for (user, token) in [("nia", nia), ("oli", oli), ("pat", pat)] { try await Self.claim(server, user, "pro", token, key: key) }

        // Nia cancels on her phone and the push is lost: her sync asks Google again.
        server.google.change(nia, .cancel)
        let synced = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/nia/google/sync", key: key)
        #expect(synced.status == 200, "\(synced.text)")
        #expect(Self.subscriptions(synced).first?["will_renew"] as? Bool == false, "\(synced.text)")
        #expect(Self.active(synced, "pro"), "a cancelled subscription runs to its expiry")
        let events = try await server.eventCount()
        let again = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/nia/google/sync", key: key)
        #expect(again.status == 200 && Self.subscriptions(again).first?["will_renew"] as? Bool == false)
        #expect(try await server.eventCount() == events, "asking again records nothing")

        // Oli's is revoked and Pat's forgotten by Google while no push arrived: reconcile finds both.
        server.google.change(oli, .revoke)
        server.google.change(pat, .forget)
        let report = try await server.services.googleReconciliation.reconcile(bundleID: Self.bundle)
        #expect(report.subscriptionsAsked == 3 && report.changed == 1 && report.gone == 1 && report.refused == 0, "\(report)")
        #expect(!Self.active(try await server.send("GET", "/v1/apps/\(Self.bundle)/users/oli", key: key), "pro"))
        let ended = try await server.waitForChange(key: key) { change in
            ["entitlement.revoked", "entitlement.expired"].contains(change["type"] as? String) && change["user_id"] as? String == "oli"
                && (change["change"] as? [String: any Sendable])?["store"] as? String == "google_play"
        }
        #expect(ended.found, "the feed and webhooks say which store the purchase is from")
        let second = try await server.services.googleReconciliation.reconcile(bundleID: Self.bundle)
        #expect(second.subscriptionsAsked == 2 && second.changed == 0, "a token Google forgot is not asked about again: \(second)")

        let metrics = try await server.send("GET", "/metrics").text.split(separator: "\n")
        let calls = metrics.filter { $0.hasPrefix("ledger_google_calls_total{") }
        #expect(
            calls.contains {
                $0.contains(#"endpoint="GET purchases/subscriptionsv2/tokens/{token}""#) && $0.contains(#"outcome="answered""#)
            },
            "\(calls)")
        #expect(calls.contains { $0.contains(#"status="410""#) && $0.contains(#"outcome="refused""#) }, "\(calls)")
        let evidence = metrics.filter { $0.hasPrefix("ledger_evidence_total{") && $0.contains(#"store="google_play""#) }
        #expect(evidence.contains { $0.contains(#"kind="google_purchase""#) && $0.contains(#"result="accepted""#) }, "\(metrics)")
    }

    @Test func theConsoleShowsGooglesEvidenceDecodedWithTheFieldsThatDecided() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro", accountID: "acct-quinn")
        try await Self.claim(server, "quinn", "pro", token, key: key)
        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        let page = try await server.send("GET", "/console/apps/\(Self.bundle)/users/quinn", headers: [("Cookie", reader.cookie)])
        #expect(page.status == 200 && page.text.contains("Google Play"), "\(page.text.prefix(500))")
        let link = try #require(
            page.text.range(of: #"/evidence/sha256(:|%3A)[0-9a-f]{64}"#, options: .regularExpression).map { String(page.text[$0]) })
        let evidence = try await server.send(
            "GET", "/console/apps/\(Self.bundle)" + link.replacingOccurrences(of: "%3A", with: ":"), headers: [("Cookie", reader.cookie)])
        #expect(evidence.status == 200)
        #expect(evidence.text.contains("Google Play&#39;s answer about a subscription") || evidence.text.contains("Google Play's answer"))
        #expect(evidence.text.contains(#"<table id="summary">"#), "\(evidence.text)")
        #expect(evidence.text.contains("SUBSCRIPTION_STATE_ACTIVE") && evidence.text.contains("acct-quinn"), "\(evidence.text)")
        #expect(evidence.text.contains("<th>product</th><td>pro (monthly)</td>"), "\(evidence.text)")
    }

    @Test func aMergeMovesBothStoresPurchasesAndLaterGoogleNewsFollowsThem() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let sub = server.google.purchaseSubscription(package: Self.package, productID: "pro", accountID: "guest-account")
        try await Self.claim(server, "guest-9", "pro", sub, key: key)
        let coins = server.google.purchaseProduct(package: Self.package, productID: "coins_500")
        try await Self.claim(server, "guest-9", "coins_500", coins, key: key)
        let apple = SimulatedTransaction(
            transactionID: "mg-1", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        let bought = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "guest-9", "signed_transaction": try server.app.signedTransaction(apple)])
        #expect(bought.status == 200, "\(bought.text)")

        let merged = try await server.send("POST", "/v1/apps/\(Self.bundle)/users/ray/merge", key: key, json: ["from": "guest-9"])
        #expect(merged.status == 200, "\(merged.text)")
        #expect(Self.active(merged, "pro"), "\(merged.text)")
        #expect(
            (merged.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 600, "500 from Google, 100 from Apple: \(merged.text)"
        )
        let guest = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/guest-9", key: key)
        #expect(!Self.active(guest, "pro") && Self.subscriptions(guest).isEmpty, "\(guest.text)")

        // An upgrade bought on the same Google account, notified before anyone claims it, is ray's.
        let upgraded = try #require(server.google.upgrade(sub, to: "pro_yearly"))
        let notification = PubSubPusher.subscriptionNotification(package: Self.package, type: 4, token: upgraded)
        #expect(try await GooglePlayNotificationTests.push(server, notification) == 200)
        let ray = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/ray", key: key)
        let yearly = Self.subscriptions(ray).first { $0["original_transaction_id"] as? String == GooglePurchaseKey.of(token: upgraded) }
        #expect(yearly?["product_id"] as? String == "pro_yearly" && Self.active(ray, "pro"), "\(ray.text)")
        let guestAfter = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/guest-9", key: key)
        #expect(Self.subscriptions(guestAfter).isEmpty && !Self.active(guestAfter, "pro"), "\(guestAfter.text)")
    }

    @Test func financeMetricsAreShownForEveryStoreOrForOne() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // A license tester's purchase is the sandbox's, where the simulated Apple's are.
        try await server.configureGoogle(testPurchases: true)
        let key = try await server.key([.ingest, .read])
        let token = server.google.purchaseSubscription(package: Self.package, productID: "pro", test: true)
        try await Self.claim(server, "sol", "pro", token, key: key)
        let apple = try server.app.signedTransaction(IngestionFlowTests.subscription("sol-apple-1"))
        let bought = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "sol", "signed_transaction": apple])
        #expect(bought.status == 200, "\(bought.text)")
        let reader = try await ConsoleTests.signIn(server, key: try await server.key([.read]))

        /// The products counted active today in the CSV for `store` ("" for every store).
        func activeProducts(_ store: String) async throws -> Set<String> {
            let csv = try await server.send(
                "GET", "/console/apps/\(Self.bundle)/metrics.csv?kind=active&environment=Sandbox&store=\(store)",
                headers: [("Cookie", reader.cookie)])
            #expect(csv.status == 200, "\(csv.text)")
            var products: Set<String> = []
            for line in csv.text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                if fields.count == 5, fields[2] == "active" { products.insert(fields[3]) }
            }
            return products
        }
        let everyStore = try await activeProducts("")
        #expect(everyStore.contains("pro") && everyStore.count == 2, "\(everyStore)")
        #expect(try await activeProducts("google_play") == ["pro"])
        let appStore = try await activeProducts("app_store")
        #expect(appStore.count == 1 && !appStore.contains("pro"), "\(appStore)")
        let page = try await server.send(
            "GET", "/console/apps/\(Self.bundle)/metrics?environment=Sandbox&store=google_play", headers: [("Cookie", reader.cookie)])
        #expect(page.status == 200 && page.text.contains(#"<option value="google_play" selected>Google Play</option>"#), "\(page.text)")

        // The books name Google's order, its price and currency, and the store.
        let export = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/exports/transactions?environment=Sandbox&format=csv", key: server.adminKey)
        let google = export.text.split(separator: "\r\n").filter { $0.contains(",sol,") && $0.contains(",google_play,") }
        #expect(google.count == 1, "\(export.text)")
        let order = server.google.subscription(token)?.orderIDs.first ?? "?"
        #expect(google.first?.hasPrefix(order + ",") == true && google.first?.contains(",9.990,9990,USD,") == true, "\(google)")
    }

    @Test func aConsumableSpentThenPartlyRefundedLeavesAProportionalDebt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let coins = server.google.purchaseProduct(package: Self.package, productID: "coins_500", quantity: 2)
        try await Self.claim(server, "tam", "coins_500", coins, key: key)
        let spent = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/tam/consumptions", key: key,
            json: ["currency": "coins", "amount": 800, "idempotency_key": "sword-1"])
        #expect(spent.status == 200, "\(spent.text)")
        // One of the two packs refunded: half of what the purchase gave is taken back.
        server.google.refundProduct(coins, quantity: 1)
        let voided = PubSubPusher.notification(
            package: Self.package, kind: "voidedPurchaseNotification",
            ["purchaseToken": coins, "orderId": server.google.product(coins)?.orderID ?? "", "productType": 2, "refundType": 2])
        #expect(try await GooglePlayNotificationTests.push(server, voided) == 200)
        let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/tam", key: key)
        #expect((state.json["balances"] as? [String: any Sendable])?["coins"] as? Int == -300, "1000 − 800 − 500: \(state.text)")
        // The same refund told again (the hourly list) takes nothing more.
        #expect(try await server.services.googleRefunds.pass()[Self.bundle] == 0)
        let again = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/tam", key: key)
        #expect((again.json["balances"] as? [String: any Sendable])?["coins"] as? Int == -300, "\(again.text)")
        let export = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/exports/transactions?environment=Production&format=csv", key: server.adminKey)
        let rows = export.text.split(separator: "\r\n").filter { $0.contains(",tam,") }
        #expect(rows.filter { $0.contains(",refund,") }.count == 1, "\(export.text)")
    }

    @Test func oneUserOwningFromBothStoresIsExportedAndErasedWhole() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.configureGoogle()
        let key = try await server.key([.ingest, .read])
        let apple = try server.app.signedTransaction(IngestionFlowTests.subscription("uma-apple-1"))
        let bought = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key, json: ["user_id": "uma", "signed_transaction": apple])
        #expect(bought.status == 200 && Self.active(bought, "pro"), "\(bought.text)")
        let coins = server.google.purchaseProduct(package: Self.package, productID: "coins_500", accountID: "acct-uma")
        try await Self.claim(server, "uma", "coins_500", coins, key: key)

        func exported() async throws -> [Substring] {
            var rows: [Substring] = []
            for environment in ["Production", "Sandbox"] {
                let export = try await server.send(
                    "GET", "/v1/apps/\(Self.bundle)/exports/transactions?environment=\(environment)&format=csv", key: server.adminKey)
                #expect(export.status == 200, "\(export.text)")
                rows += export.text.split(separator: "\r\n").dropFirst()
            }
            return rows
        }
        let before = try await exported().filter { $0.contains(",uma,") }
        // The store is the column before the last (the fact's position).
        let store = { (row: Substring) in String(row.split(separator: ",", omittingEmptySubsequences: false).dropLast().last ?? "") }
        #expect(Set(before.map(store)) == ["app_store", "google_play"], "\(before)")
        let access = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/uma/export", key: server.adminKey)
        #expect(access.status == 200 && access.text.contains("uma-apple-1"), "\(access.text.prefix(1500))")
        #expect((access.json["google_play_purchases"] as? [[String: any Sendable]])?.count == 1, "\(access.text.prefix(1500))")

        let erased = try await server.send("DELETE", "/v1/apps/\(Self.bundle)/users/uma", key: server.adminKey)
        #expect(erased.status == 200, "\(erased.text)")
        let pseudonym = try #require(erased.json["pseudonym"] as? String ?? erased.json["user_id"] as? String, "\(erased.text)")
        let after = try await exported()
        #expect(!after.contains { $0.contains(",uma,") }, "\(after)")
        let renamed = after.filter { $0.contains(",\(pseudonym),") }
        #expect(Set(renamed.map(store)) == ["app_store", "google_play"], "\(after)")
    }
}
