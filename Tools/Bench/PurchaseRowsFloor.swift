import Foundation
import LedgerPostgres

/// What PostgreSQL alone needs to write what a recorded purchase writes: pgbench inserting the
/// rows of one subscription and one consumable, copied from the run's own warm-up, into tables
/// made `LIKE` the ledger's (same columns, indexes, constraints, compression), with new keys, a
/// transaction of as many purchases as the ingestion's groups held, pipelined in one round trip,
/// durable commits. No server, no signature, no hash computed, no read, no lock, no change feed:
/// a floor, not a rival. Issue 16 asks ingestion for a share of pgbench's one-row INSERT; this
/// line says how much of that share the rows a purchase must write leave to everything else.
struct PurchaseRowsFloor {
    let baseline: PgbenchBaseline

    /// A ledger table whose rows a new purchase adds: how the chosen purchases (`c`) find their
    /// rows (`x`), and the columns a copy rewrites to stay unique (`$k`: a number unique to it).
    struct Table {
        var name: String
        var rows: String
        var keyed: [String: String]
    }

    /// Every table a new purchase writes, the `users` projection's at `version`. The evidence is
    /// any signed transaction's (one of the warm-up's, the same size as the chosen purchases').
    static func tables(version: Int) -> [Table] {
        let copy = { (column: String) in [column: "\(column) || '-' || $k"] }
        return [
            Table(
                name: "evidence",
                rows: "CROSS JOIN LATERAL (SELECT * FROM ledger.evidence WHERE kind = 'signed_transaction' OFFSET c.k LIMIT 1) x",
                keyed: ["digest": "'sha256:' || encode(sha256($k::bytea), 'hex')"]),
            Table(
                name: "events", rows: "JOIN ledger.events x ON x.stream = c.stream",
                keyed: copy("stream").merging(["event_id": "gen_random_uuid()"]) { $1 }),
            Table(name: "streams", rows: "JOIN ledger.streams x ON x.stream = c.stream", keyed: copy("stream")),
            Table(
                name: "transaction_owners_v\(version)",
                rows: "JOIN ledger.transaction_owners_v\(version) x ON x.original_transaction_id = c.original",
                keyed: copy("original_transaction_id")),
            Table(
                name: "user_timelines_v\(version)", rows: "JOIN ledger.user_timelines_v\(version) x ON x.user_id = c.user_id",
                keyed: copy("user_id")),
            Table(
                name: "finance_rows_v\(version)", rows: "JOIN ledger.finance_rows_v\(version) x ON x.original_transaction_id = c.original",
                keyed: copy("original_transaction_id")),
            Table(
                name: "metric_contributions_v\(version)",
                rows: "JOIN ledger.metric_contributions_v\(version) x ON x.original_transaction_id = c.original",
                keyed: copy("original_transaction_id")),
        ]
    }

    /// The statements of one transaction of `group` purchases (after `prepare`): a number unique
    /// to the transaction, then one INSERT a table. Plain SQL, for pgbench's script and for the
    /// server's floor (`ServerFloor`), which writes the same rows.
    struct Transaction {
        /// INSERTs whose `generate_series(1, {group})` the group's size replaces.
        fileprivate let inserts: [String]
        fileprivate static let groupSize = "{group}"

        func statements(group: Int) -> [String] {
            ["SELECT nextval('bench_floor.copies');"]
                + inserts.map { $0.replacingOccurrences(of: Self.groupSize, with: String(group)) }
        }
    }

    /// The floor's tables and templates in schema `bench_floor` (made anew). Templates: the rows of
    /// the run's last purchase of each product (`k` 0 and 1), which each transaction alternates.
    func prepare(owner: PostgresConnection) throws -> Transaction {
        let version = try owner.query("SELECT active_version FROM ledger.projections WHERE name = 'users'")[0]["active_version"].int()
        // The two purchases: the last purchase stream of each product, and who claimed it.
        try owner.execute(
            script: """
                SET client_min_messages = warning;
                DROP SCHEMA IF EXISTS bench_floor CASCADE;
                CREATE SCHEMA bench_floor;
                CREATE SEQUENCE bench_floor.copies;
                CREATE TABLE bench_floor.chosen AS
                SELECT row_number() OVER (ORDER BY p.product) - 1 AS k, p.stream, p.original, c.data->>'userID' AS user_id
                  FROM (SELECT DISTINCT ON (data->>'productID') data->>'productID' AS product, stream, data->>'originalTransactionID' AS original
                          FROM ledger.events WHERE event_type = 'Purchased' ORDER BY data->>'productID', position DESC LIMIT 2) AS p
                  JOIN ledger.events c ON c.stream = p.stream AND c.event_type = 'TransactionClaimed';
                """)
        var inserts: [String] = []
        for table in Self.tables(version: version) {
            try owner.execute(
                script: """
                    CREATE TABLE bench_floor.\(table.name) (LIKE ledger.\(table.name) INCLUDING ALL);
                    CREATE TABLE bench_floor.t_\(table.name) AS SELECT c.k, x.* FROM bench_floor.chosen c \(table.rows);
                    """)
            // The columns a copy writes: every column but those the table fills itself.
            let columns = try owner.query(
                """
                SELECT attname FROM pg_attribute
                 WHERE attrelid = 'ledger.\(table.name)'::regclass AND attnum > 0 AND NOT attisdropped AND attidentity = '' AND attgenerated = ''
                   AND attname <> 'tx_id' ORDER BY attnum
                """
            ).map { try $0["attname"].string() }
            // pgbench reads ":name" as a variable: the unique number is spelt without one.
            let unique = "(currval('bench_floor.copies') * 1000 + g)::text"
            let values = columns.map { table.keyed[$0]?.replacingOccurrences(of: "$k", with: unique) ?? "t.\($0)" }
            inserts.append(
                "INSERT INTO bench_floor.\(table.name) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) "
                    + "FROM generate_series(1, \(Transaction.groupSize)) AS g JOIN bench_floor.t_\(table.name) AS t ON t.k = g % 2;")
        }
        return Transaction(inserts: inserts)
    }

    /// pgbench's script: `transaction` for `group` purchases, pipelined in one round trip.
    func script(_ transaction: Transaction, group: Int) throws -> URL {
        let lines = ["\\startpipeline", "BEGIN;"] + transaction.statements(group: group) + ["COMMIT;", "\\endpipeline"]
        let script = baseline.folder.appendingPathComponent("purchase-rows-\(group).sql")
        try (lines.joined(separator: "\n") + "\n").write(to: script, atomically: true, encoding: .utf8)
        return script
    }

    /// Purchases a second with `clients` connections of `group` purchases a transaction, and the
    /// machine's CPU per purchase; nil if pgbench failed.
    func run(group: Int, clients: Int, seconds: Int, owner: PostgresConnection) throws -> (rate: Double, cpu: Double?)? {
        let script = try script(try prepare(owner: owner), group: group)
        defer { _ = try? owner.execute(script: "DROP SCHEMA IF EXISTS bench_floor CASCADE") }
        guard let result = try baseline.run(script: script, clients: clients, seconds: seconds, perSecond: 6_000 / group, prepared: true)
        else { return nil }
        return (result.rate * Double(group), result.cpu.map { $0 / Double(group) })
    }
}
