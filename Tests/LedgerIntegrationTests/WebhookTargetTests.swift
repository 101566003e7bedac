import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerTestSupport
import LedgerWebhooks
import Testing
import WebhookReceiver

/// A webhook cannot be pointed inside the operator's network: refused when it is defined, and
/// again when it is delivered — after its name is resolved, so a name that resolves inside later
/// is caught and its change parked with the reason.
@Suite(.takingTurns) struct WebhookTargetTests {
    static let secret = "whsec_0123456789abcdef0123456789abcdef"

    static var closedPolicy: WebhookPolicy {
        var policy = TestServer.quickWebhooks
        policy.targets.allowPrivateNetworks = false
        return policy
    }

    @Test func internalAndMetadataTargetsAreRefusedAtDefinition() async throws {
        let server = try await TestServer.start(webhooks: Self.closedPolicy)
        defer { Task { await server.stop() } }
        let path = "/v1/apps/\(TestServer.bundleID)/webhooks/game"
        for (url, rule) in [
            ("http://169.254.169.254/latest/meta-data/", "link-local"), ("http://[fe80::1]/", "link-local"),
            ("http://[fd00:ec2::254]/", "metadata"), ("http://100.100.100.200/", "metadata"),
            ("http://127.0.0.1:9/hook", "loopback"), ("http://10.0.0.8/hook", "private"), ("http://[fd12::1]/", "unique-local"),
            ("http://100.64.1.1/", "carrier-grade NAT"), ("http://localhost:9/hook", "loopback"),
        ] {
            let refused = try await server.send("PUT", path, key: server.adminKey, json: ["url": url, "secret": Self.secret])
            #expect(refused.status == 400 && refused.errorCode == "invalid_webhook", "\(url): \(refused.text)")
            #expect(refused.text.contains(rule), "\(url): the refusal names the rule: \(refused.text)")
        }
        let listed = try await server.send("GET", "/v1/apps/\(TestServer.bundleID)/webhooks", key: server.adminKey)
        #expect(!listed.text.contains("169.254"), "nothing refused was stored")
    }

    @Test func aNameThatResolvesInsideIsRefusedAtDeliveryAndItsChangeParked() async throws {
        let receiver = WebhookReceiver(secret: Self.secret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        // Defined while private networks were allowed (as on the operator's previous settings)…
        let open = try await TestServer.start()
        let port = receiver.url.split(separator: ":").last!.split(separator: "/").first!
        let url = "http://localhost:\(port)/hook"
        let defined = try await open.send(
            "PUT", "/v1/apps/\(TestServer.bundleID)/webhooks/game", key: open.adminKey, json: ["url": url, "secret": Self.secret])
        #expect(defined.status == 201, "\(defined.text)")
        await open.stop()
        // …then delivered by a server that allows only public addresses.
        let closed = try await TestServer.start(configure: false, sharing: open, webhooks: Self.closedPolicy)
        defer { Task { await closed.stop() } }
        let key = try await closed.key([.ingest])
        let answer = try await closed.send(
            "POST", "/v1/apps/\(TestServer.bundleID)/transactions", key: key,
            json: [
                "user_id": "mallory",
                "signed_transaction": try closed.app.signedTransaction(
                    SimulatedTransaction(
                        transactionID: "t-ssrf", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))),
            ])
        #expect(answer.status == 200, "\(answer.text)")
        var parked: [[String: any Sendable]] = []
        for _ in 0..<100 where parked.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            parked =
                try await closed.send("GET", "/v1/apps/\(TestServer.bundleID)/webhooks/game/failures", key: closed.adminKey)
                .json["failures"] as? [[String: any Sendable]] ?? []
        }
        let reason = parked.first?["last_error"] as? String ?? ""
        #expect(parked.count == 1 && reason.contains("localhost resolves to") && reason.contains("loopback"), "\(parked)")
        #expect((parked.first?["attempts"] as? Int) == 1, "refused targets are parked at once, not retried")
        #expect(receiver.accepted.isEmpty, "nothing reached the address inside")
    }
}
