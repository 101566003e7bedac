import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres

/// Month-end exports from the finance projection: one row per money-moving fact, read in pages
/// by keyset (so memory stays constant however many rows), formatted as RFC 4180 CSV or JSON lines.
///
/// With `knownAt`, the report as it was when the books were closed at that instant: the rows are
/// computed again from the facts recorded by then (owners as known then, late refunds and
/// renewals absent), for the transactions the window touches, and sorted in memory.
package struct FinanceExport: Sendable {
    package enum Format: String, Sendable, CaseIterable { case csv, jsonl }

    package var bundleID: String
    package var environment: AppleEnvironment
    /// Inclusive start, exclusive end (nil: open).
    package var from: Date?
    package var to: Date?
    /// Only what was recorded by then (nil: everything known now).
    package var knownAt: Date?
    package var pageSize = 2_000

    package init(bundleID: String, environment: AppleEnvironment, from: Date?, to: Date?, knownAt: Date? = nil) {
        self.bundleID = bundleID
        self.environment = environment
        self.from = from
        self.to = to
        self.knownAt = knownAt
    }

    package static let columns = [
        "transaction_id", "original_transaction_id", "user_id", "product_id", "kind", "quantity",
        "price", "price_milliunits", "currency", "occurred_at", "environment", "storefront", "recorded_at",
        "offer_type", "offer_id", "offer_discount_type", "store", "position",
    ]

    /// Calls `body` with each page of rows, in (occurred_at, original transaction, seq) order.
    package func forEachPage(on pool: PostgresPool, _ body: ([FinanceRow]) async throws -> Void) async throws {
        if let knownAt {
            let rows = try await rowsKnown(at: knownAt, on: pool)
            for start in stride(from: 0, to: rows.count, by: pageSize) {
                try await body(Array(rows[start..<min(start + pageSize, rows.count)]))
            }
            return
        }
        var after: (Date, String, Int)?
        while true {
            // Only the conditions that apply, each a plain comparison: statements are prepared, and
            // a generic plan for "$3 IS NULL OR occurred_at >= $3" scanned and sorted the whole app
            // for every page.
            var conditions = ["bundle_id = $1", "environment = $2"]
            var parameters: [(any PostgresBindable)?] = [bundleID, environment.rawValue]
            func bind(_ value: any PostgresBindable) -> String {
                parameters.append(value)
                return "$\(parameters.count)"
            }
            if let from { conditions.append("occurred_at >= \(bind(from))") }
            if let to { conditions.append("occurred_at < \(bind(to))") }
            if let (time, original, seq) = after {
                let at = bind(time)
                conditions.append("occurred_at >= \(at)")
                conditions.append(
                    "(occurred_at, original_transaction_id, seq) > (\(at)::timestamptz, \(bind(original))::text, \(bind(seq))::int)")
            }
            let rows = try await pool.query(
                """
                SELECT kind, transaction_id, original_transaction_id, user_id, product_id, quantity, price, currency, storefront,
                       environment, occurred_at, recorded_at, seq, offer_type, offer_id, offer_discount_type, position
                  FROM ledger.finance_rows
                 WHERE \(conditions.joined(separator: " AND "))
                 ORDER BY occurred_at, original_transaction_id, seq
                 LIMIT \(pageSize)
                """, parameters)
            var page: [FinanceRow] = []
            page.reserveCapacity(rows.count)
            for row in rows {
                page.append(
                    FinanceRow(
                        kind: FinanceRow.Kind(rawValue: try row["kind"].string()) ?? .purchase,
                        transactionID: try row["transaction_id"].string(),
                        originalTransactionID: try row["original_transaction_id"].string(), userID: row["user_id"].text,
                        productID: try row["product_id"].string(), quantity: try row["quantity"].int(),
                        price: row["price"].text.flatMap { Int64($0) }, currency: row["currency"].text,
                        occurredAt: try row["occurred_at"].date(),
                        environment: AppleEnvironment(rawValue: try row["environment"].string()) ?? environment,
                        storefront: row["storefront"].text, recordedAt: try row["recorded_at"].date(),
                        offerType: row["offer_type"].text.flatMap { Int($0) }, offerIdentifier: row["offer_id"].text,
                        offerDiscountType: row["offer_discount_type"].text, position: row["position"].text.flatMap { Int64($0) }))
                after = (try row["occurred_at"].date(), try row["original_transaction_id"].string(), try row["seq"].int())
            }
            if !page.isEmpty { try await body(page) }
            if rows.count < pageSize { return }
        }
    }

    /// The window's rows as the facts recorded by `instant` make them. The transactions are those
    /// with a row in the window now (a row known then is known now, with the same time), their
    /// purchase streams read up to `instant`, 500 streams a statement.
    func rowsKnown(at instant: Date, on pool: PostgresPool) async throws -> [FinanceRow] {
        var conditions = ["bundle_id = $1", "environment = $2"]
        var parameters: [(any PostgresBindable)?] = [bundleID, environment.rawValue]
        if let from { parameters.append(from); conditions.append("occurred_at >= $\(parameters.count)") }
        if let to { parameters.append(to); conditions.append("occurred_at < $\(parameters.count)") }
        let originals = try await pool.query(
            """
            SELECT DISTINCT original_transaction_id AS original FROM ledger.finance_rows WHERE \(conditions.joined(separator: " AND "))
            """, parameters
        ).map { try $0["original"].string() }
        var rows: [FinanceRow] = []
        for start in stride(from: 0, to: originals.count, by: 500) {
            let streams = originals[start..<min(start + 500, originals.count)].map {
                LedgerStream.purchase(bundleID, originalTransactionID: $0)
            }
            let events = try await pool.query(
                EventStore.selectEventsSQL + " WHERE e.stream = ANY($1::text[]) AND e.recorded_at <= $2 ORDER BY e.position",
                [PostgresTextArray(streams), instant])
            var ledgers: [String: AppLedger] = [:]
            for event in events {
                let recorded = try RecordedEvent(row: event)
                guard let (_, fact) = try StoredFacts.fact(from: recorded) else { continue }
                ledgers[recorded.stream, default: AppLedger(bundleID: bundleID)].apply(fact)
            }
            for (original, stream) in zip(originals[start...], streams) {
                rows += (ledgers[stream]?.financeRows(ofTransaction: original) ?? []).filter { row in
                    row.environment == environment && from.map { row.occurredAt >= $0 } ?? true && to.map { row.occurredAt < $0 } ?? true
                }
            }
        }
        return rows.sorted {
            ($0.occurredAt, $0.originalTransactionID, $0.transactionID, $0.kind.rawValue) < (
                $1.occurredAt, $1.originalTransactionID, $1.transactionID, $1.kind.rawValue
            )
        }
    }

    package static func csvHeader() -> String { columns.joined(separator: ",") + "\r\n" }

    package static func csvLine(_ row: FinanceRow) -> String { csvRecord(fields(row)) }

    /// One RFC 4180 record (CRLF-terminated; fields with commas, quotes or line breaks quoted;
    /// nil fields empty): every export's CSV.
    static func csvRecord(_ fields: [String?]) -> String {
        fields.map { field in
            guard let field else { return "" }
            guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) else { return field }
            return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }.joined(separator: ",") + "\r\n"
    }

    package static func jsonLine(_ row: FinanceRow) -> String {
        var object: [String: Any] = [:]
        for (column, value) in zip(columns, fields(row)) { object[column] = value ?? NSNull() }
        object["quantity"] = row.quantity
        object["price_milliunits"] = row.price.map { $0 as Any } ?? NSNull()
        object["position"] = row.position.map { $0 as Any } ?? NSNull()
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Price in units of the currency ("9.99", "-4.995"), from Apple's milliunits, exactly.
    static func units(_ milliunits: Int64) -> String {
        let sign = milliunits < 0 ? "-" : ""
        let magnitude = milliunits.magnitude
        let fraction = String(magnitude % 1000)
        return sign + String(magnitude / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    static func fields(_ row: FinanceRow) -> [String?] {
        [
            row.transactionID, row.originalTransactionID, row.userID, row.productID, row.kind.rawValue, String(row.quantity),
            row.price.map(units), row.price.map { String($0) }, row.currency,
            RFC3339.string(row.occurredAt), row.environment.rawValue, row.storefront, RFC3339.string(row.recordedAt),
            row.offerTypeName, row.offerIdentifier, row.offerDiscountType, Store(purchaseKey: row.originalTransactionID).rawValue,
            row.position.map { String($0) },
        ]
    }
}

/// Where finance exports are read: a replica that has every batch this server knows of, one node
/// for every page of an export.
package struct FinanceExports: Sendable {
    let reads: ReadReplicas

    package init(reads: ReadReplicas) { self.reads = reads }

    /// An export ready to stream. The node is chosen here, before a caller answers anything, so
    /// a database that is away fails the request cleanly rather than mid-body.
    package struct Opened: Sendable {
        let export: FinanceExport
        let pool: PostgresPool

        package func forEachPage(_ body: ([FinanceRow]) async throws -> Void) async throws {
            try await export.forEachPage(on: pool, body)
        }
    }

    /// The node a whole-app read goes to (the currency ledger's).
    package func pool() async throws -> PostgresPool { try await reads.pool(atLeast: await reads.requiredForAll()) }

    package func open(_ export: FinanceExport) async throws -> Opened {
        Opened(export: export, pool: try await reads.pool(atLeast: await reads.requiredForAll()))
    }
}
