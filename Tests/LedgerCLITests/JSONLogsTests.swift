import EmbeddedPostgres
import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `LEDGER_LOG_FORMAT=json`: every line `ledger serve` writes is a JSON object; each request has
/// one access line (route pattern, status, duration) carrying the request id the client got back
/// and the trace id of the `traceparent` it sent; a query string never reaches the log.
@Suite(.takingTurns) struct JSONLogsTests {
    @Test func everyLineIsJSONAndEachRequestHasAnAccessLineWithItsIds() async throws {
        let served = try await ServedLedger("json", environment: ["LEDGER_LOG_FORMAT": "json"])
        defer { served.stop() }
        let (pid, base) = (served.pid, served.base)
        #expect(try await poll(base + "/readyz", until: 200)?.0 == 200)

        let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
        let healthz = try await Self.get(
            base + "/healthz", headers: ["X-Request-Id": "log-test-1", "traceparent": "00-\(trace)-00f067aa0ba902b7-01"])
        #expect(healthz == 200)
        let refused = try await Self.get(
            base + "/v1/apps/com.example.logs/users/u1?at=2026-01-01&note=sekrit-in-query", headers: ["X-Request-Id": "log-test-2"])
        #expect(refused == 401)
        kill(pid, SIGTERM)
        _ = await ChildProcess.wait(pid)

        let text = served.output
        let lines = text.split(separator: "\n").filter { !$0.isEmpty }
        #expect(lines.count > 3, "\(text)")
        var objects: [[String: Any]] = []
        for line in lines {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
                Issue.record("not a JSON object: \(line)")
                continue
            }
            #expect(
                object["time"] is String && object["level"] is String && object["message"] is String && object["label"] is String, "\(line)"
            )
            objects.append(object)
        }
        let access = objects.filter { $0["message"] as? String == "request" }
        let first = try #require(access.first { $0["request_id"] as? String == "log-test-1" }, "\(access)")
        #expect(
            first["http.route"] as? String == "/healthz" && first["http.status"] as? String == "200"
                && first["http.method"] as? String == "GET")
        #expect(first["trace_id"] as? String == trace, "\(first)")
        #expect(Double(first["duration_ms"] as? String ?? "") != nil, "\(first)")
        let second = try #require(access.first { $0["request_id"] as? String == "log-test-2" }, "\(access)")
        #expect(
            second["http.route"] as? String == "/v1/apps/{bundle_id}/users/{user_id}" && second["http.status"] as? String == "401",
            "\(second)")
        #expect(second["trace_id"] == nil)
        #expect(!text.contains("sekrit-in-query") && !text.contains("2026-01-01"), "the query string is never logged")
        #expect(objects.contains { $0["message"] as? String == "ledger listening" })
    }

    static func get(_ url: String, headers: [String: String]) async throws -> Int {
        var request = URLRequest(url: URL(string: url)!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
