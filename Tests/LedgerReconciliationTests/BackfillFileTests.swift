import LedgerReconciliation
import Testing

/// Backfill files as operators export them: CSV with a header, or JSON lines; a file with one
/// bad line imports nothing and names the line.
@Suite struct BackfillFileTests {
    @Test func csvColumnsAreFoundByTheHeaderWithQuotedFields() throws {
        let lines = try BackfillFile.parse(
            """
            email,user_id,original_transaction_id
            "a@example.com",player-1,2000000001
            "b, the second",\"\"\"quoted\"\" player\",2000000002

            c@example.com,player-3,2000000003
            """)
        #expect(lines.map(\.userID) == ["player-1", "\"quoted\" player", "player-3"])
        #expect(lines.map(\.number) == [2, 3, 5], "numbers are the lines an editor shows")
        #expect(lines[0].reference == .transaction("2000000001"))
    }

    @Test func jsonLinesTakeATransactionOrAReceipt() throws {
        let lines = try BackfillFile.parse(
            """
            {"user_id": "u1", "original_transaction_id": 2000000001}
            {"user_id": "u2", "receipt_data": "MIIT..."}
            """)
        #expect(lines[0].reference == .transaction("2000000001"))
        #expect(lines[1].reference == .receipt("MIIT..."))
        #expect(lines[1].key.hasPrefix("receipt:sha256:"), "a receipt is known by its digest across runs")
    }

    @Test func aWrongLineIsNamedAndNothingIsRead() {
        #expect(throws: BackfillFile.Invalid(line: 1, reason: "the header names no user_id column")) {
            try BackfillFile.parse("id,original_transaction_id\n1,2\n")
        }
        #expect(throws: BackfillFile.Invalid(line: 3, reason: "user_id is missing")) {
            try BackfillFile.parse("user_id,original_transaction_id\nu1,1\n,2\n")
        }
        #expect(throws: BackfillFile.Invalid(line: 2, reason: "not a JSON object")) {
            try BackfillFile.parse("{\"user_id\": \"u1\", \"original_transaction_id\": \"1\"}\n[1]\n")
        }
    }
}
