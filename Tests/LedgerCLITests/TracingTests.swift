import AppStoreSimulator
import Crypto
import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerTestSupport
import OTLPReceiver
import Testing
import WebhookReceiver

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Traces as an operator turns them on: `ledger serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` set to a
/// real OTLP/HTTP receiver. A game server's call carrying its `traceparent` buys a subscription;
/// the receiver gets one trace holding the request, its verification, the group commit, its
/// PostgreSQL round trips and — continued from the stored trace — the webhook delivery, which
/// reaches the game server with a `traceparent` of the same trace. No span names the user.
@Suite(.takingTurns) struct TracingTests {
    static let bundle = "com.example.traces"
    static let secret = "whsec_traces_0123456789abcdef0123456"
    static let issuer = "7b2e9c6e-0f3b-4a57-9b55-2f4f0a7c1d12"

    @Test func onePurchaseIsOneTraceFromTheCallThroughTheWebhookDelivery() async throws {
        let collector = OTLPReceiver()
        try await collector.start()
        defer { Task { await collector.stop() } }
        let receiver = WebhookReceiver(secret: Self.secret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let folder = NSTemporaryDirectory() + "ledger-traces-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let authority = try TestCertificateAuthority()
        try authority.writeRoot(to: folder + "/root.der")
        // Apple's App Store Server API, played by the simulator, for a sync that asks it.
        let app = SimulatedApp(authority: authority, bundleID: Self.bundle, appAppleID: 99, environment: "Sandbox")
        let apiKey = P256.Signing.PrivateKey()
        let simulator = ServerAPISimulator()
        simulator.register(app, key: .init(issuerID: Self.issuer, keyID: "TRACES1", publicKey: apiKey.publicKey))
        let apple = VerifyReceiptServer()
        let urls = try await apple.start { simulator.register(on: $0) }
        defer { apple.stop() }
        let appleBase = String(urls.production.dropLast("/production/verifyReceipt".count))
        let served = try await ServedLedger(
            "traces",
            environment: [
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100",
                "LEDGER_APPLE_ROOT_CERTIFICATES": folder + "/root.der", "LEDGER_APPLE_RECONCILE_INTERVAL": "off",
                "LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1", "LEDGER_WEBHOOK_POLL_MS": "100",
                "LEDGER_APPLE_SERVER_API_URL": appleBase + "/production", "LEDGER_APPLE_SERVER_API_SANDBOX_URL": appleBase + "/sandbox",
            ])
        defer { served.stop() }
        #expect(try await poll(served.base + "/readyz", until: 200)?.0 == 200, "\(served.output)")
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = served.database.connectionString
        environment["LEDGER_SECRETS_KEY"] = LedgerCommandTests.secretsKey
        let created = try await ChildProcess.run(
            LedgerCommandTests.ledgerBinary, ["keys", "create", "--name", "tracer", "--scopes", "admin"], environment: environment)
        let key = try #require(created.output.split(separator: "\n").last { $0.hasPrefix("lk_") }.map(String.init), "\(created.output)")

        let apps = served.base + "/v1/apps/\(Self.bundle)"
        let configured = try JSONSerialization.data(withJSONObject: [
            "environments": ["Sandbox"], "apple_app_id": 99,
            "app_store_server_api": ["issuer_id": Self.issuer, "key_id": "TRACES1", "private_key": apiKey.pemRepresentation],
        ])
        #expect(try await Self.call("PUT", apps, key: key, json: String(decoding: configured, as: UTF8.self)).0 == 200)
        #expect(
            try await Self.call(
                "PUT", apps + "/products/pro.monthly", key: key, json: #"{"type": "auto_renewable", "entitlements": ["pro"]}"#
            ).0 == 200)
        // A receiver's URL may carry a key of its own in its query: no span may show it.
        let hookURL = receiver.url + "?key=query-key-of-the-receiver"
        let hook = try await Self.call(
            "PUT", apps + "/webhooks/game", key: key, json: #"{"url": "\#(hookURL)", "secret": "\#(Self.secret)"}"#)
        #expect(hook.0 == 201, "\(hook.1)")

        let bought = SimulatedTransaction(
            transactionID: "trace-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        let user = "player-with-a-trace"
        let (trace, caller) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
        let purchase = try await Self.call(
            "POST", apps + "/transactions", key: key,
            json: String(
                decoding: try JSONSerialization.data(withJSONObject: [
                    "user_id": user, "signed_transaction": try app.signedTransaction(bought),
                ]), as: UTF8.self),
            headers: ["traceparent": "00-\(trace)-\(caller)-01"])
        #expect(purchase.0 == 200, "\(purchase.1)")

        // The webhook delivery carries the caller's trace on.
        var delivered: WebhookReceiver.Delivery?
        for _ in 0..<200 where delivered == nil {
            delivered = receiver.accepted.first { $0.userID == user }
            if delivered == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let delivery = try #require(delivered, "no delivery: \(served.output)")
        #expect(delivery.signatureValid)
        #expect(delivery.traceparent?.hasPrefix("00-\(trace)-") == true, "\(delivery.traceparent ?? "no traceparent")")

        // Every span of the trace, once the delivery's has been exported too.
        var spans: [ReceivedSpan] = []
        for _ in 0..<100 {
            spans = collector.spans.filter { $0.traceID == trace }
            if spans.contains(where: { $0.name == "webhook delivery" }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let names = spans.map(\.name).sorted()
        #expect(collector.refused.isEmpty, "\(collector.refused)")
        let request = try #require(spans.first { $0.kind == 2 && $0.name.hasPrefix("POST /v1/apps/") }, "\(names)")
        #expect(request.name == "POST /v1/apps/{bundle_id}/transactions" && request.parentSpanID == caller, "\(request)")
        #expect(request.attributes["http.response.status_code"] == "200" && request.service == "entitlement-ledger", "\(request)")
        let byID = Dictionary(spans.map { ($0.spanID, $0) }, uniquingKeysWith: { a, _ in a })
        /// Whether `span` descends from the request's span.
        func underRequest(_ span: ReceivedSpan) -> Bool {
            var parent = span.parentSpanID
            while let next = byID[parent] {
                if next.spanID == request.spanID { return true }
                parent = next.parentSpanID
            }
            return false
        }
        let verification = try #require(spans.first { $0.name.hasPrefix("verify ") }, "\(names)")
        #expect(underRequest(verification))
        let group = try #require(spans.first { $0.name == "group commit" }, "\(names)")
        #expect(underRequest(group) && group.attributes["ledger.group.size"] == "1", "\(group)")
        let roundTrips = spans.filter { $0.attributes["db.system.name"] == "postgresql" && $0.kind == 3 }
        #expect(roundTrips.count >= 3 && roundTrips.allSatisfy(underRequest), "\(names)")
        // The append is among them, named by what it runs, never by what it was given.
        let statements = roundTrips.map { $0.attributes["db.query.summaries"] ?? $0.attributes["db.query.summary"] ?? "" }
        #expect(statements.contains { $0.contains("ledger.append") }, "\(roundTrips.map(\.name)): \(statements)")
        let webhook = try #require(spans.first { $0.name == "webhook delivery" }, "\(names)")
        #expect(underRequest(webhook) && webhook.attributes["ledger.webhook"] == "game" && webhook.kind == 4, "\(webhook)")
        #expect(delivery.traceparent?.contains(webhook.spanID) == true, "the receiver's parent is the delivery span")

        // Nothing in any span names the user (traces leave the ledger for stores no erasure
        // reaches) or shows a URL's query; the HTTP client's own spans, which record whole URLs,
        // are not made.
        for span in collector.spans {
            #expect(!span.name.contains(user) && !span.attributes.values.contains { $0.contains(user) }, "\(span)")
            #expect(!span.attributes.values.contains { $0.contains("query-key") } && span.attributes["url.full"] == nil, "\(span)")
        }
        // The purchase and the delivery in the metrics: every line of the scrape parses as
        // Prometheus text, and the group commit and delivery histograms counted them.
        let (status, scrape) = try await get(served.base + "/metrics")
        #expect(status == 200)
        let samples = try Self.parsePrometheus(scrape)
        #expect(samples["ledger_group_commit_size_count"].map { $0 >= 1 } == true, "\(scrape)")
        #expect(samples["ledger_group_commit_duration_seconds_count"].map { $0 >= 1 } == true)
        #expect(samples["ledger_webhook_delivery_duration_seconds_count{outcome=\"delivered\"}"].map { $0 >= 1 } == true, "\(scrape)")
        #expect(samples["ledger_replica_waits_total"] == 0)
        for lag in ["ledger_projection_lag_seconds", "ledger_change_lag_seconds", "ledger_change_lag_events"] {
            #expect(samples[lag].map { $0 >= 0 } == true, "\(lag)")
        }
        #expect(samples["ledger_rebuild_running"] == 0 && samples["ledger_rebuild_events"] == 0)

        // A sync asks Apple: its call is a child of the request, named by the endpoint with
        // `{id}`, with Apple's status and no retry; the transaction id is in no span.
        let restored = SimulatedTransaction(
            transactionID: "2000000123456789", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -120),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        simulator.add([restored], to: app)
        let syncTrace = "1af7651916cd43dd8448eb211c80319d"
        let synced = try await Self.call(
            "POST", apps + "/users/\(user)/sync", key: key, json: #"{"transaction_id": "2000000123456789"}"#,
            headers: ["traceparent": "00-\(syncTrace)-\(caller)-01"])
        #expect(synced.0 == 200, "\(synced.1)")
        // The request's span ends after its children, so it may come in a later export: wait for both.
        var (appleCall, syncSpan): (ReceivedSpan?, ReceivedSpan?) = (nil, nil)
        for _ in 0..<100 where appleCall == nil || syncSpan == nil {
            appleCall = collector.spans.first { $0.traceID == syncTrace && $0.name.hasPrefix("App Store Server API ") }
            syncSpan = collector.spans.first { $0.traceID == syncTrace && $0.kind == 2 }
            if appleCall == nil || syncSpan == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let call = try #require(appleCall, "\(collector.spans.filter { $0.traceID == syncTrace }.map(\.name))")
        #expect(call.name.contains("{id}") && call.kind == 3, "\(call)")
        #expect(call.attributes["http.response.status_code"] == "200" && call.attributes["apple.retries"] == "0", "\(call)")
        let syncRequest = try #require(syncSpan, "\(collector.spans.filter { $0.traceID == syncTrace }.map(\.name))")
        #expect(
            syncRequest.name == "POST /v1/apps/{bundle_id}/users/{user_id}/sync" && syncRequest.parentSpanID == caller, "\(syncRequest)")
        #expect(
            !collector.spans.contains {
                $0.name.contains("2000000123456789") || $0.attributes.values.contains { $0.contains("2000000123456789") }
            },
            "the transaction id left in a span")

        // Batches are traces of their own.
        #expect(
            collector.spans.contains { $0.name == "projection batch" || $0.name == "change batch" }, "\(Set(collector.spans.map(\.name)))")
    }

    /// `parentbased_traceidratio` as an operator sets it, at 0: the ledger's head sampler keeps no
    /// trace of its own starting, and still follows a caller's decision either way.
    @Test func atRatioZeroOnlyTheCallersSampledTraceIsKept() async throws {
        let collector = OTLPReceiver()
        try await collector.start()
        defer { Task { await collector.stop() } }
        let served = try await ServedLedger(
            "head-sampled",
            environment: [
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100",
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0", "LEDGER_APPLE_RECONCILE_INTERVAL": "off",
            ])
        defer { served.stop() }
        #expect(try await poll(served.base + "/readyz", until: 200)?.0 == 200, "\(served.output)")
        let (sampled, unsampled) = ("4bf92f3577b34da6a3ce929d0e0e4736", "5bf92f3577b34da6a3ce929d0e0e4737")
        for _ in 0..<20 { #expect(try await JSONLogsTests.get(served.base + "/healthz", headers: [:]) == 200) }
        #expect(
            try await JSONLogsTests.get(served.base + "/healthz", headers: ["traceparent": "00-\(unsampled)-00f067aa0ba902b7-00"]) == 200)
        #expect(try await JSONLogsTests.get(served.base + "/healthz", headers: ["traceparent": "00-\(sampled)-00f067aa0ba902b7-01"]) == 200)
        // Spans leave in the order they ended: once the sampled request's has come, any other would have.
        for _ in 0..<100 where !collector.spans.contains(where: { $0.traceID == sampled && $0.kind == 2 }) {
            try await Task.sleep(for: .milliseconds(100))
        }
        let request = try #require(collector.spans.first { $0.traceID == sampled && $0.kind == 2 }, "\(served.output)")
        #expect(request.name == "GET /healthz" && request.parentSpanID == "00f067aa0ba902b7", "\(request)")
        #expect(collector.spans.allSatisfy { $0.traceID == sampled }, "\(collector.spans.map { "\($0.traceID) \($0.name)" })")
        #expect(served.output.contains("otel.head_sampling_ratio=0.0"), "the ledger's head sampler took the ratio: \(served.output)")
    }

    /// Prometheus' text format, strictly: `# HELP` / `# TYPE` lines, and samples `name{labels} value`
    /// whose value is a number; a line that is neither fails the test. Samples by name and labels.
    static func parsePrometheus(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        var typed: Set<String> = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") { continue }
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                #expect(parts.count == 4 && ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]), "\(line)")
                typed.insert(String(parts[2]))
                continue
            }
            let space = try #require(line.lastIndex(of: " "), "not a sample: \(line)")
            let series = String(line[..<space])
            let value = try #require(Double(line[line.index(after: space)...].replacingOccurrences(of: "+Inf", with: "inf")), "\(line)")
            let name = String(series.prefix { $0 != "{" })
            let family = ["_bucket", "_count", "_sum"].reduce(name) {
                $0.hasSuffix($1) && typed.contains(String($0.dropLast($1.count))) ? String($0.dropLast($1.count)) : $0
            }
            #expect(typed.contains(family), "a sample before its family's TYPE: \(line)")
            samples[series] = value
        }
        return samples
    }

    static func call(
        _ method: String, _ url: String, key: String, json: String, headers: [String: String] = [:]
    ) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(json.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
