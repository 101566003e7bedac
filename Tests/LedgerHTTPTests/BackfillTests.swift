import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerHTTP
import LedgerPostgres
import LedgerReconciliation
import LedgerTestSupport
import Testing

/// Backfill at adoption over the real server's parts, a real PostgreSQL and the simulator's App
/// Store Server API: a file of users and their original transaction ids, imported and resumable.
@Suite struct BackfillTests {
    static let bundle = TestServer.bundleID
    static let month: TimeInterval = 30 * 86_400

    func eventCount(_ server: TestServer) async throws -> Int {
        try await server.pool.query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
    }

    @Test func tenThousandTransactionsAreImportedFromAFileAndASecondRunRecordsNothing() async throws {
        try await HeavyTests.oneAtATime {
            let server = try await TestServer.start(poolSize: 8)
            defer { Task { await server.stop() } }
            // 100 customers, each with a subscription renewed 99 times (five history pages each):
            // 10,000 transactions, in few enough requests that the suite's other tests keep their pace.
            let start = Date(timeIntervalSinceNow: -99 * Self.month - 86_400)
            var csv = "user_id,original_transaction_id\n"
            for customer in 0..<100 {
                var periods = [SimulatedTransaction(transactionID: "b\(customer)-0", productID: "pro.monthly", purchaseDate: start,
                                                    expiresDate: start.addingTimeInterval(Self.month))]
                for n in 1..<100 { periods.append(periods.last!.renewed(transactionID: "b\(customer)-\(n)", period: Self.month)) }
                server.serverAPI.add(periods, customer: "customer-\(customer)", to: server.app)
                csv += "player-\(customer),b\(customer)-0\n"
            }
            csv += "player-x,404404\n"  // Apple knows no such transaction: that line fails, the rest go on
            let lines = try BackfillFile.parse(csv)
            #expect(lines.count == 101 && lines.first?.number == 2)
    
            let backfill = Backfill(lookups: server.services.lookups, ingestor: server.services.ingestor, pool: server.pool, concurrency: 16,
                                    logger: TestCluster.quietLogger)
            let first = try await backfill.run(bundleID: Self.bundle, lines: lines)
            #expect(first.imported == 100 && first.transactions == 10_000 && first.skipped == 0, "\(first)")
            #expect(first.failed.count == 1 && first.failed.first?.line == 102 && first.failed.first?.reason.hasPrefix("apple_transaction_not_found") == true)
            let recorded = try await eventCount(server)
    
            let key = try await server.key([.read])
            for customer in [0, 49, 99] {
                let state = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/player-\(customer)", key: key)
                let pro = (state.json["entitlements"] as? [String: any Sendable])?["pro"] as? [String: any Sendable]
                #expect(pro?["active"] as? Bool == true && pro?["original_transaction_id"] as? String == "b\(customer)-0", "\(state.text)")
            }
    
            let second = try await backfill.run(bundleID: Self.bundle, lines: lines)
            #expect(second.skipped == 100 && second.imported == 0 && second.failed.count == 1, "\(second)")
            #expect(try await eventCount(server) == recorded, "a second run records nothing")
        }
    }

    @Test func filesAreReadAsCSVOrJSONLinesAndAWrongOneIsRefusedWhole() throws {
        let csv = try BackfillFile.parse("user_id,original_transaction_id\n\"a, b\",1001\n\nc,1002\n")
        #expect(csv == [BackfillLine(number: 2, userID: "a, b", reference: .transaction("1001")),
                        BackfillLine(number: 4, userID: "c", reference: .transaction("1002"))])
        let jsonl = try BackfillFile.parse("{\"user_id\": \"a\", \"original_transaction_id\": 1001}\n{\"user_id\": \"b\", \"receipt_data\": \"TUlJ\"}\n")
        #expect(jsonl.map(\.reference) == [.transaction("1001"), .receipt("TUlJ")])
        #expect(throws: BackfillFile.Invalid(line: 1, reason: "the header names no user_id column")) { try BackfillFile.parse("user,id\n1,2\n") }
        #expect(throws: BackfillFile.Invalid(line: 3, reason: "user_id is missing")) {
            try BackfillFile.parse("user_id,original_transaction_id\na,1\n,2\n")
        }
    }
}
