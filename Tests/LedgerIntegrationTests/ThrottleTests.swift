import Foundation
import LedgerAccess
import LedgerTestSupport
import NIOHTTP1
import Testing

/// Guessing keys or console sign-ins from one address is slowed to the limit: past it, guesses
/// are answered 429 with `Retry-After` and cost no key lookup, while a good key from the same
/// address still works. A client cannot escape by naming another address in X-Forwarded-For.
@Suite(.takingTurns) struct ThrottleTests {
    @Test func wrongKeysAreThrottledWhileAGoodKeyStillWorks() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let path = "/v1/apps/\(TestServer.bundleID)"
        var statuses: [Int] = []
        for attempt in 0..<20 {
            statuses.append(try await server.send("GET", path, key: "lk_guess\(attempt)").status)
        }
        #expect(statuses.allSatisfy { $0 == 401 }, "\(statuses)")
        let lookups = server.keys.lookups
        for attempt in 20..<30 {
            let refused = try await server.send(
                "GET", path, key: "lk_guess\(attempt)", headers: [("X-Forwarded-For", "198.51.100.\(attempt)")])
            #expect(refused.status == 429 && refused.errorCode == "too_many_attempts", "\(refused.text)")
            let wait = Int(refused.headers.first(name: "Retry-After") ?? "") ?? 0
            #expect((1...60).contains(wait), "Retry-After says when: \(wait)")
        }
        #expect(server.keys.lookups == lookups, "a throttled guess costs no key lookup")
        let good = try await server.send("GET", path, key: server.adminKey)
        #expect(good.status == 200, "a good key from the throttled address still works: \(good.text)")
        let metrics = try await server.send("GET", "/metrics").text
        #expect(metrics.contains(#"ledger_auth_failures_total{surface="api"} 20"#), "\(metrics)")
        #expect(metrics.contains(#"ledger_auth_throttled_total{surface="api"} 10"#))
    }

    @Test func consoleSignInsAreThrottledToo() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        for attempt in 0..<20 {
            let wrong = try await server.send("POST", "/console/sign-in", body: Data("key=lk_nope\(attempt)".utf8), headers: form)
            #expect(wrong.status == 401)
        }
        let throttled = try await server.send("POST", "/console/sign-in", body: Data("key=lk_nope".utf8), headers: form)
        #expect(throttled.status == 429 && throttled.text.contains("Too many failed sign-ins"))
        #expect(throttled.headers.first(name: "Retry-After") != nil)
        let good = try await server.send(
            "POST", "/console/sign-in", body: Data("key=\(server.adminKey)".utf8), headers: form, followingRedirects: false)
        #expect(good.status == 303, "a good key signs in from the throttled address")
    }

    @Test func aKeyOverItsRequestLimitWaitsWhileOtherKeysGoOn() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let limited = try await server.keys.create(name: "runaway", scopes: [.read], bundleID: nil, rateLimit: 0.5).secret
        let path = "/v1/apps/\(TestServer.bundleID)/products"
        var statuses: [Int] = []
        var waits: [String] = []
        for _ in 0..<6 {
            let answer = try await server.send("GET", path, key: limited)
            statuses.append(answer.status)
            if answer.status == 429 {
                #expect(answer.errorCode == "rate_limited")
                waits.append(answer.headers.first(name: "Retry-After") ?? "")
            }
        }
        // One request at once, then one every two seconds: the requests right after the first wait.
        #expect(statuses.first == 200 && statuses.contains(429), "\(statuses)")
        #expect(waits.allSatisfy { ["1", "2"].contains($0) }, "\(waits)")
        #expect(try await server.send("GET", path, key: server.adminKey).status == 200, "another key is not held back")
        try await Task.sleep(for: .seconds(2))
        #expect(try await server.send("GET", path, key: limited).status == 200, "the key's rate refilled")
    }
}
