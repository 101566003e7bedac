import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import Synchronization

/// Apple's Retention Messaging endpoints the ledger's operators call: the realtime URL, and the
/// sandbox performance test, which sends signed realtime requests to that URL at Apple's
/// concurrency and reports response times and failures by Apple's names.
extension ServerAPISimulator {
    /// What a performance test sends and how it judges (Apple's `PerformanceTestConfig`; the
    /// defaults are those of Apple's model answer).
    package struct PerformanceConfig: Sendable {
        package var maxConcurrentRequests = 10
        package var totalRequests = 100
        package var totalDuration = 60_000
        /// Milliseconds: an answer later than this is TIMED_OUT.
        package var responseTimeThreshold = 500
        /// Percent of requests answered in time with a 2xx and a JSON object.
        package var successRateThreshold = 95
        package init() {}
    }

    /// One test as Apple reports it.
    struct PerformanceRun {
        var config: PerformanceConfig
        var target: String
        var times: [Double] = []
        var failures: [String: Int] = [:]
        var finished = 0
    }

    static let noRealtimeURL = ScriptedError(status: 404, body: ["errorCode": 4_040_021, "errorMessage": "Realtime URL not found."])

    func registerRetentionRoutes(on router: Router<BasicRequestContext>) {
        router.put("/:endpoint/inApps/v1/messaging/realtime/url") { request, context in
            let body = try await Self.json(request)
            return try self.answer(request, context) { store, _ in
                guard let url = body["realtimeURL"] as? String, url.utf8.count <= 256, url.hasPrefix("http") else {
                    throw Self.refusal(400, 4_000_218, "Invalid realtime URL.")
                }
                self.mutate(store.app) { $0.realtimeURL = url }
                return [:]
            }
        }
        router.get("/:endpoint/inApps/v1/messaging/realtime/url") { request, context in
            try self.answer(request, context) { store, _ in
                guard let url = store.realtimeURL else { throw Self.noRealtimeURL }
                return ["realtimeURL": url]
            }
        }
        registerMessageRoutes(on: router)
        router.post("/:endpoint/inApps/v1/messaging/performanceTest") { request, context in
            let body = try await Self.json(request)
            return try self.answer(request, context) { store, _ in try self.startPerformanceTest(body, store: store) }
        }
        router.get("/:endpoint/inApps/v1/messaging/performanceTest/result/:id") { request, context in
            try self.answer(request, context) { _, id in
                guard let run = self.state.withLock({ $0.performanceRuns[id] }) else {
                    throw Self.refusal(404, 4_040_018, "Performance test request not found.")
                }
                return Self.report(run)
            }
        }
    }

    /// Messages, images and default messages as Apple keeps them. Apple reviews what is uploaded;
    /// the simulator decides at once: approved, or rejected when the header (or, for an image, its
    /// id) contains "reject" — so a test can meet both states.
    func registerMessageRoutes(on router: Router<BasicRequestContext>) {
        router.put("/:endpoint/inApps/v1/messaging/message/:id") { request, context in
            let body = try await Self.json(request)
            return try self.answer(request, context) { store, id in
                guard UUID(uuidString: id) != nil else { throw Self.refusal(400, 4_000_161, "Invalid message identifier.") }
                guard store.messages[id] == nil else { throw Self.refusal(409, 4_090_001, "Message identifier already exists.") }
                guard let header = body["header"] as? String, (1...66).contains(header.count), let text = body["body"] as? String,
                    (1...144).contains(text.count)
                else {
                    throw Self.refusal(400, 4_000_162, "Invalid message header or body.")
                }
                if let image = body["image"] as? [String: Any], store.images[image["imageIdentifier"] as? String ?? ""] == nil {
                    throw Self.refusal(404, 4_040_015, "Image not found.")
                }
                let state = header.lowercased().contains("reject") ? "REJECTED" : "APPROVED"
                self.mutate(store.app) { $0.messages[id] = (header, state) }
                return [:]
            }
        }
        router.put("/:endpoint/inApps/v1/messaging/image/:id") { request, context in
            let png = try await request.body.collect(upTo: 16 << 20)
            return try self.answer(request, context) { store, id in
                guard UUID(uuidString: id) != nil else { throw Self.refusal(400, 4_000_163, "Invalid image identifier.") }
                guard store.images[id] == nil else { throw Self.refusal(409, 4_090_000, "Image identifier already exists.") }
                guard request.headers[.contentType] == "image/png", png.readableBytes > 8 else {
                    throw Self.refusal(400, 4_000_164, "Invalid image.")
                }
                let size = request.uri.queryParameters.get("imageSize") ?? "FULL_SIZE"
                self.mutate(store.app) { $0.images[id] = (size, id.lowercased().contains("reject") ? "REJECTED" : "APPROVED") }
                return [:]
            }
        }
        router.get("/:endpoint/inApps/v1/messaging/message/list") { request, context in
            try self.answer(request, context) { store, _ in
                [
                    "messageIdentifiers": store.messages.sorted { $0.key < $1.key }.map {
                        ["messageIdentifier": $0.key, "messageState": $0.value.state]
                    }
                ]
            }
        }
        router.get("/:endpoint/inApps/v1/messaging/image/list") { request, context in
            try self.answer(request, context) { store, _ in
                [
                    "imageIdentifiers": store.images.sorted { $0.key < $1.key }.map {
                        ["imageIdentifier": $0.key, "imageState": $0.value.state, "imageSize": $0.value.size]
                    }
                ]
            }
        }
        router.put("/:endpoint/inApps/v1/messaging/default/:product/:locale") { request, context in
            let body = try await Self.json(request)
            return try self.answer(request, context) { store, _ in
                let key = (context.parameters.get("product") ?? "") + "/" + (context.parameters.get("locale") ?? "")
                guard let id = body["messageIdentifier"] as? String, let message = store.messages[id] else {
                    throw Self.refusal(404, 4_040_014, "Message not found.")
                }
                guard message.state == "APPROVED" else { throw Self.refusal(403, 4_030_017, "Message not approved.") }
                self.mutate(store.app) { $0.defaultMessages[key] = id }
                return [:]
            }
        }
    }

    /// The realtime URL set for the app, if any.
    package func realtimeURL(of app: SimulatedApp) -> String? {
        state.withLock { $0.stores[Self.storeKey(app.environment, app.bundleID)]?.realtimeURL }
    }

    /// The default messages set, by "product/locale".
    package func defaultMessages(of app: SimulatedApp) -> [String: String] {
        state.withLock { $0.stores[Self.storeKey(app.environment, app.bundleID)]?.defaultMessages ?? [:] }
    }

    /// Sandbox only, one run at a time, to the realtime URL set; the requests name the
    /// subscription the caller gave, each with a new request identifier, signed as Apple signs.
    func startPerformanceTest(_ body: [String: Any], store: Store) throws -> [String: Any] {
        guard store.app.environment == "Sandbox", let original = body["originalTransactionId"] as? String, !original.isEmpty else {
            throw Self.refusal(400, 4_000_211, "Invalid performance test request.")
        }
        guard let url = store.realtimeURL else { throw Self.noRealtimeURL }
        let config = state.withLock { $0.performanceConfig }
        let id = UUID().uuidString.lowercased()
        let started: Bool = state.withLock { state in
            if state.performanceRuns.values.contains(where: { $0.finished < $0.config.totalRequests }) { return false }
            state.performanceRuns[id] = PerformanceRun(config: config, target: url)
            return true
        }
        guard started else { throw Self.refusal(400, 4_000_213, "A performance test is already running.") }
        let app = store.app
        let productID = store.transactions[original]?.productID ?? "unknown"
        Task { await self.run(id, app: app, original: original, productID: productID, url: url, config: config) }
        return ["config": Self.json(config), "requestId": id]
    }

    /// The run's requests, `maxConcurrentRequests` at a time.
    func run(_ id: String, app: SimulatedApp, original: String, productID: String, url: String, config: PerformanceConfig) async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<config.totalRequests {
                if index >= config.maxConcurrentRequests { await group.next() }
                group.addTask {
                    let (milliseconds, failure) = await Self.attempt(
                        app: app, original: original, productID: productID, url: url, config: config)
                    self.state.withLock { state in
                        state.performanceRuns[id]?.finished += 1
                        if let failure { state.performanceRuns[id]?.failures[failure, default: 0] += 1 }
                        if let milliseconds { state.performanceRuns[id]?.times.append(milliseconds) }
                    }
                }
            }
        }
    }

    /// One signed request: how long the answer took (nil: none came), and the failure by Apple's
    /// `SendAttemptResult` name, if it failed.
    static func attempt(
        app: SimulatedApp, original: String, productID: String, url: String, config: PerformanceConfig
    ) async -> (Double?, String?) {
        guard let body = try? app.realtimeRequest(originalTransactionID: original, productID: productID) else { return (nil, "OTHER") }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let start = ContinuousClock.now
        do {
            let response = try await deliveries.execute(request, timeout: .milliseconds(Int64(config.responseTimeThreshold)))
            let answer = try await response.body.collect(upTo: 1 << 20)
            let elapsed = ContinuousClock.now - start
            let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            guard (200..<300).contains(Int(response.status.code)) else { return (milliseconds, "UNSUCCESSFUL_HTTP_RESPONSE_CODE") }
            guard (try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView))) is [String: Any] else {
                return (milliseconds, "INVALID_RESPONSE")
            }
            return (milliseconds, nil)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return (nil, "TIMED_OUT")
        } catch {
            return (nil, "NO_RESPONSE")
        }
    }

    /// Apple's `PerformanceTestResultResponse`.
    static func report(_ run: PerformanceRun) -> [String: Any] {
        let total = run.config.totalRequests
        let pending = total - run.finished
        let succeeded = run.finished - run.failures.values.reduce(0, +)
        let rate = run.finished == 0 ? 0 : succeeded * 100 / total
        let sorted = run.times.sorted()
        func percentile(_ p: Double) -> Int {
            guard !sorted.isEmpty else { return 0 }
            return Int(sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)].rounded())
        }
        let average = sorted.isEmpty ? 0 : Int((sorted.reduce(0, +) / Double(sorted.count)).rounded())
        return [
            "config": json(run.config), "target": run.target,
            "result": pending > 0 ? "PENDING" : rate >= run.config.successRateThreshold ? "PASS" : "FAIL",
            "successRate": rate, "numPending": pending,
            "responseTimes": [
                "average": average, "p50": percentile(0.5), "p90": percentile(0.9), "p95": percentile(0.95), "p99": percentile(0.99),
            ],
            "failures": run.failures,
        ]
    }

    static func json(_ config: PerformanceConfig) -> [String: Any] {
        [
            "maxConcurrentRequests": config.maxConcurrentRequests, "totalRequests": config.totalRequests,
            "totalDuration": config.totalDuration, "responseTimeThreshold": config.responseTimeThreshold,
            "successRateThreshold": config.successRateThreshold,
        ]
    }

    /// How the next performance tests run (a test can make them smaller or stricter).
    package func setPerformanceConfig(_ config: PerformanceConfig) { state.withLock { $0.performanceConfig = config } }
}
