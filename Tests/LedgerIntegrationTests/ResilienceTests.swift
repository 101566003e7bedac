import AppStoreSimulator
import AsyncHTTPClient
import EmbeddedPostgres
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// What operations meet: a big month-end export, the database going away, a deploy's SIGTERM.
@Suite(.takingTurns) struct ResilienceTests {
    static let bundle = TestServer.bundleID

    /// Resident memory of this process (server and client both live here), in bytes.
    static func residentBytes() -> Int {
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
        return (Int(statm.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test func aHundredThousandRowExportIsStreamedPageByPage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // 100,000 finance rows straight into the projection's table (what 100,000 purchases build).
        let owner = try PostgresConnection.connect(server.configuration)
        try owner.query(
            """
            INSERT INTO ledger.finance_rows_v1 (bundle_id, original_transaction_id, seq, kind, transaction_id, user_id, product_id, quantity,
                                                price, currency, storefront, environment, occurred_at, recorded_at)
            SELECT $1, 'o' || g, 0, 'purchase', 't' || g, 'user, "quoted" ' || (g % 977), 'coins.100', 1, 990, 'USD', 'USA',
                   CASE WHEN g % 10 = 0 THEN 'Sandbox' ELSE 'Production' END, timestamptz '2026-10-01' + g * interval '20 second', now()
              FROM generate_series(1, 111111) g
            """, [Self.bundle])
        let key = try await server.key([.finance])
        var request = HTTPClientRequest(
            url: server.baseURL
                + "/v1/apps/\(Self.bundle)/exports/transactions?format=csv&from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z")
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        let before = Self.residentBytes()
        var peak = before
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "Content-Length") == nil, "streamed, not sized up front")
        var lines = 0, bytes = 0, chunks = 0
        var header = ""
        var pending = Data()
        for try await chunk in response.body {
            chunks += 1
            bytes += chunk.readableBytes
            pending.append(contentsOf: chunk.readableBytesView)
            while let end = pending.firstRange(of: Data("\r\n".utf8)) {
                if header.isEmpty { header = String(decoding: pending[..<end.lowerBound], as: UTF8.self) }
                lines += 1
                pending.removeSubrange(..<end.upperBound)
            }
            if chunks % 10 == 0 { peak = max(peak, Self.residentBytes()) }
        }
        #expect(header.hasPrefix("transaction_id,original_transaction_id,user_id,product_id,kind,quantity,price"))
        #expect(lines - 1 == 100_000, "October's Production rows (every tenth row is Sandbox, left out)")
        #expect(chunks >= 20, "written page by page: \(chunks) chunks")
        // The server's memory is measured in a process of its own (LedgerCLITests): here other
        // suites allocate in parallel in this process.
        print("export: \(bytes) bytes in \(chunks) chunks, this process grew \((peak - before) / 1024) KiB")
    }

    @Test func theDatabaseGoingAwayIs503AndTheServerRecovers() async throws {
        let cluster = try await TestCluster.privateCluster()
        let server = try await TestServer.start(cluster: cluster)
        defer { Task { await server.stop() } }
        let key = try await server.key([.read, .ingest])
        let path = "/v1/apps/\(Self.bundle)/users/ivy"
        #expect(try await server.send("GET", path, key: key).status == 200)

        try await cluster.stop(mode: "fast")
        let down = try await server.send("GET", path, key: key)
        #expect(down.status == 503 && down.errorCode == "database_unavailable", "\(down.status) \(down.text)")
        #expect(down.headers.first(name: "Retry-After") != nil)
        let posted = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/users/ivy/consumptions", key: key,
            json: ["currency": "coins", "amount": 1, "idempotency_key": "x"])
        #expect(posted.status == 503, "\(posted.text)")
        #expect(try await server.send("GET", "/readyz").status == 503)
        #expect(try await server.send("GET", "/healthz").status == 200, "the process itself is fine")

        try await cluster.start()
        var recovered = false
        for _ in 0..<100 where !recovered {
            recovered = try await server.send("GET", path, key: key).status == 200
            if !recovered { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(recovered, "requests succeed again once the database is back")
        // Each pooled connection that died with the server fails once before its slot reconnects
        // (PostgresPool), so readiness, like the route above, is given the same time to recover.
        var ready = false
        for _ in 0..<100 where !ready {
            ready = try await server.send("GET", "/readyz").status == 200
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready, "/readyz is 200 again once the database is back")
    }

    @Test func aDatabaseFaultIsA500NotAnOutageAndNoDatabaseTextLeaks() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.read])
        // A DBA revokes what the server needs: a fault to fix, not something to wait out.
        try PostgresConnection.connect(server.configuration).execute(script: "REVOKE SELECT ON ledger.user_timelines FROM ledger_app")
        let answer = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/never-read", key: key)
        #expect(answer.status == 500 && answer.errorCode == "internal_error", "\(answer.status) \(answer.text)")
        #expect(answer.headers.first(name: "Retry-After") == nil)
        #expect(!answer.text.contains("permission") && !answer.text.contains("42501"), "no database text reaches a client: \(answer.text)")
    }

    @Test func gracefulShutdownFinishesRequestsInFlight() async throws {
        let server = try await TestServer.start()
        let key = try await server.key([.ingest])
        let coins = SimulatedTransaction(
            transactionID: "g-1", productID: "coins.100", type: "Consumable", purchaseDate: Date(timeIntervalSinceNow: -60))
        let receipt = try server.apple.register(server.app.receiptAnswer([coins]), environment: .production, sharedSecret: "s3cret")
        server.apple.script(.production, [.delay(.milliseconds(1500))]) // Apple is slow: the request stays in flight
        let inFlight = Task {
            try await server.send("POST", "/v1/apps/\(Self.bundle)/receipts", key: key, json: ["user_id": "jo", "receipt_data": receipt])
        }
        // In flight once Apple has it (not after a guessed half second: a busy machine took longer
        // to get it there, and the stop then came first).
        try await waitUntil { server.apple.calls(.production) >= 1 }
        let stopping = Task { await server.stop() }
        let answer = try await inFlight.value
        #expect(answer.status == 200, "the request in flight when SIGTERM came still completes: \(answer.text)")
        #expect((answer.json["balances"] as? [String: any Sendable])?["coins"] as? Int == 100)
        await stopping.value
        await #expect(throws: (any Error).self, "after the shutdown nothing listens") {
            try await server.send("GET", "/healthz", timeout: 5)
        }
    }
}
