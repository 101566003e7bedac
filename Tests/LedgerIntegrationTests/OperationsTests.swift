import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerTestSupport
import Testing

/// `/healthz`, `/readyz`, `/metrics`, and `/openapi.json` checked against real answers.
@Suite(.takingTurns) struct OperationsTests {
    static let bundle = TestServer.bundleID

    @Test func healthReadinessAndMetrics() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        #expect(try await server.send("GET", "/healthz").json["status"] as? String == "ok")
        let ready = try await server.send("GET", "/readyz")
        #expect(ready.status == 200 && ready.json["status"] as? String == "ready", "\(ready.text)")
        _ = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/someone", key: server.adminKey)
        let metrics = try await server.send("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(
            metrics.text.contains(#"ledger_http_requests_total{route="/v1/apps/{bundle_id}/users/{user_id}",method="GET",status="200"} 1"#),
            "\(metrics.text)")
        #expect(
            metrics.text.contains(
                #"ledger_http_request_duration_seconds_bucket{route="/v1/apps/{bundle_id}/users/{user_id}",method="GET",le="+Inf"} 1"#))
        #expect(metrics.text.contains("ledger_projection_lag_events "))
        #expect(metrics.text.contains("ledger_events_appended "))
        #expect(!metrics.text.contains("someone"), "no user ids in labels")
    }

    @Test func everyRouteIsDocumentedAndRealAnswersMatchTheDocument() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let raw = try await server.send("GET", "/openapi.json")
        let document = try #require(try JSONSerialization.jsonObject(with: raw.body) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let validator = SchemaValidator(document: document)
        // The validator can fail: a wrong shape is caught (so the checks below mean something).
        let userState = try #require(validator.schema(path: "/v1/apps/{bundle_id}/users/{user_id}", method: "GET", status: 200))
        #expect(validator.violations(of: ["user_id": 5, "extra": true] as [String: Any], against: userState).count >= 6)
        #expect(!validator.violations(of: ["error": ["code": 1]] as [String: Any], against: ["$ref": "#/components/schemas/Error"]).isEmpty)
        let paths = try #require(document["paths"] as? [String: Any])
        let routes: [(String, String)] = [
            ("PUT", "/v1/apps/{bundle_id}"), ("GET", "/v1/apps/{bundle_id}"), ("PUT", "/v1/apps/{bundle_id}/products/{product_id}"),
            ("GET", "/v1/apps/{bundle_id}/products"), ("POST", "/v1/apps/{bundle_id}/transactions"),
            ("POST", "/v1/apps/{bundle_id}/receipts"),
            ("POST", "/v1/apps/{bundle_id}/notifications/apple"), ("GET", "/v1/apps/{bundle_id}/users/{user_id}"),
            ("GET", "/v1/apps/{bundle_id}/users/{user_id}/events"), ("POST", "/v1/apps/{bundle_id}/users/{user_id}/consumptions"),
            ("POST", "/v1/apps/{bundle_id}/users/{user_id}/grants"),
            ("POST", "/v1/apps/{bundle_id}/users/{user_id}/grants/{grant_id}/revoke"),
            ("GET", "/v1/apps/{bundle_id}/exports/transactions"),
            ("PUT", "/v1/apps/{bundle_id}/users/{user_id}/app-account-tokens/{token}"),
            ("GET", "/v1/apps/{bundle_id}/app-account-tokens/{token}"),
            ("GET", "/v1/apps/{bundle_id}/users/{user_id}/export"), ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"),
            ("GET", "/openapi.json"),
            ("GET", "/v1/apps/{bundle_id}/changes"), ("GET", "/v1/apps/{bundle_id}/webhooks"),
            ("PUT", "/v1/apps/{bundle_id}/webhooks/{name}"),
            ("GET", "/v1/apps/{bundle_id}/webhooks/{name}"), ("DELETE", "/v1/apps/{bundle_id}/webhooks/{name}"),
            ("GET", "/v1/apps/{bundle_id}/webhooks/{name}/failures"), ("POST", "/v1/apps/{bundle_id}/webhooks/{name}/replay"),
        ]
        for (method, path) in routes {
            #expect((paths[path] as? [String: Any])?[method.lowercased()] != nil, "\(method) \(path) is documented")
        }

        let key = try await server.key([.admin])
        let subscription = SimulatedTransaction(
            transactionID: "d-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        let coins = SimulatedTransaction(
            transactionID: "d-2", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        let receipt = try server.apple.register(server.app.receiptAnswer([coins]), environment: .sandbox, sharedSecret: "s3cret")
        let b = Self.bundle
        let token = UUID()
        server.serverAPI.add(
            [
                SimulatedTransaction(
                    transactionID: "d-3", productID: "remove.ads", type: "Non-Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
            ],
            to: server.app)
        server.serverAPI.addOrder("MQ1", transactionIDs: ["d-3"], to: server.app)
        let checks: [(String, String, String, [String: Any]?, Data?)] = [
            ("GET", "/v1/apps/\(b)", "/v1/apps/{bundle_id}", nil, nil),
            ("PUT", "/v1/apps/\(b)", "/v1/apps/{bundle_id}", ["environments": ["Production", "Sandbox"], "apple_app_id": 4242], nil),
            (
                "PUT", "/v1/apps/\(b)/products/gems", "/v1/apps/{bundle_id}/products/{product_id}",
                ["type": "consumable", "grants": ["gems": 5]], nil
            ),
            ("GET", "/v1/apps/\(b)/products", "/v1/apps/{bundle_id}/products", nil, nil),
            (
                "POST", "/v1/apps/\(b)/transactions", "/v1/apps/{bundle_id}/transactions",
                ["user_id": "v", "signed_transaction": try server.app.signedTransaction(subscription)], nil
            ),
            ("POST", "/v1/apps/\(b)/receipts", "/v1/apps/{bundle_id}/receipts", ["user_id": "v", "receipt_data": receipt], nil),
            (
                "POST", "/v1/apps/\(b)/notifications/apple", "/v1/apps/{bundle_id}/notifications/apple", nil,
                try server.app.notificationV2("TEST")
            ),
            ("GET", "/v1/apps/\(b)/users/v", "/v1/apps/{bundle_id}/users/{user_id}", nil, nil),
            ("GET", "/v1/apps/\(b)/users/v?at=2020-01-01T00:00:00Z", "/v1/apps/{bundle_id}/users/{user_id}", nil, nil),
            ("GET", "/v1/apps/\(b)/users/v/events?limit=3", "/v1/apps/{bundle_id}/users/{user_id}/events", nil, nil),
            (
                "POST", "/v1/apps/\(b)/users/v/consumptions", "/v1/apps/{bundle_id}/users/{user_id}/consumptions",
                ["currency": "coins", "amount": 5, "idempotency_key": "o1"], nil
            ),
            (
                "POST", "/v1/apps/\(b)/users/v/consumptions", "/v1/apps/{bundle_id}/users/{user_id}/consumptions",
                ["currency": "coins", "amount": 500, "idempotency_key": "o2"], nil
            ),
            (
                "POST", "/v1/apps/\(b)/users/v/grants", "/v1/apps/{bundle_id}/users/{user_id}/grants",
                ["entitlement": "vip", "reason": "r", "grant_id": "g1"],
                nil
            ),
            ("POST", "/v1/apps/\(b)/users/v/grants/g1/revoke", "/v1/apps/{bundle_id}/users/{user_id}/grants/{grant_id}/revoke", [:], nil),
            (
                "PUT", "/v1/apps/\(b)/users/v/app-account-tokens/\(token)",
                "/v1/apps/{bundle_id}/users/{user_id}/app-account-tokens/{token}", nil, nil
            ),
            (
                "PUT", "/v1/apps/\(b)/users/w/app-account-tokens/\(token)",
                "/v1/apps/{bundle_id}/users/{user_id}/app-account-tokens/{token}", nil, nil
            ),
            ("GET", "/v1/apps/\(b)/app-account-tokens/\(token)", "/v1/apps/{bundle_id}/app-account-tokens/{token}", nil, nil),
            ("GET", "/v1/apps/\(b)/app-account-tokens/\(UUID())", "/v1/apps/{bundle_id}/app-account-tokens/{token}", nil, nil),
            ("GET", "/v1/apps/\(b)/users/v/export", "/v1/apps/{bundle_id}/users/{user_id}/export", nil, nil),
            ("POST", "/v1/apps/\(b)/users/v/sync", "/v1/apps/{bundle_id}/users/{user_id}/sync", ["transaction_id": "d-3"], nil),
            ("POST", "/v1/apps/\(b)/users/v/sync", "/v1/apps/{bundle_id}/users/{user_id}/sync", ["transaction_id": "unknown"], nil),
            ("GET", "/v1/apps/\(b)/orders/MQ1", "/v1/apps/{bundle_id}/orders/{order_id}", nil, nil),
            ("GET", "/v1/apps/\(b)/orders/MQ2", "/v1/apps/{bundle_id}/orders/{order_id}", nil, nil),
            ("GET", "/v1/apps/com.none/users/v", "/v1/apps/{bundle_id}/users/{user_id}", nil, nil),
            (
                "PUT", "/v1/apps/\(b)/webhooks/h", "/v1/apps/{bundle_id}/webhooks/{name}",
                ["url": "http://127.0.0.1:9/h", "secret": "0123456789abcdef0"], nil
            ),
            (
                "PUT", "/v1/apps/\(b)/webhooks/h", "/v1/apps/{bundle_id}/webhooks/{name}",
                ["url": "http://127.0.0.1:9/h", "secret": "short"], nil
            ),
            ("GET", "/v1/apps/\(b)/webhooks", "/v1/apps/{bundle_id}/webhooks", nil, nil),
            ("GET", "/v1/apps/\(b)/webhooks/h", "/v1/apps/{bundle_id}/webhooks/{name}", nil, nil),
            ("GET", "/v1/apps/\(b)/webhooks/h/failures", "/v1/apps/{bundle_id}/webhooks/{name}/failures", nil, nil),
            ("POST", "/v1/apps/\(b)/webhooks/h/replay", "/v1/apps/{bundle_id}/webhooks/{name}/replay", ["from_position": 1], nil),
            ("POST", "/v1/apps/\(b)/webhooks/nope/replay", "/v1/apps/{bundle_id}/webhooks/{name}/replay", ["from_position": 1], nil),
            ("GET", "/v1/apps/\(b)/changes?limit=5", "/v1/apps/{bundle_id}/changes", nil, nil),
            ("GET", "/v1/apps/\(b)/changes?wait=99", "/v1/apps/{bundle_id}/changes", nil, nil),
            ("GET", "/healthz", "/healthz", nil, nil), ("GET", "/readyz", "/readyz", nil, nil),
        ]
        for (method, url, template, json, body) in checks {
            let answer = try await server.send(method, url, key: key, json: json, body: body)
            let schema = try #require(
                validator.schema(path: template, method: method, status: answer.status),
                "\(method) \(template) documents status \(answer.status)")
            let value = try JSONSerialization.jsonObject(with: answer.body)
            let problems = validator.violations(of: value, against: schema)
            #expect(problems.isEmpty, "\(method) \(url) → \(answer.status): \(problems)")
        }
    }
}
