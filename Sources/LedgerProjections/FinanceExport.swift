import Foundation
import LedgerCore
import LedgerPostgres

/// Month-end exports from the finance projection: one row per money-moving fact, read in pages
/// by keyset (so memory stays constant however many rows), formatted as RFC 4180 CSV or JSON lines.
package struct FinanceExport: Sendable {
    package enum Format: String, Sendable, CaseIterable { case csv, jsonl }

    package var bundleID: String
    package var environment: AppleEnvironment
    /// Inclusive start, exclusive end (nil: open).
    package var from: Date?
    package var to: Date?
    package var pageSize = 2_000

    package init(bundleID: String, environment: AppleEnvironment, from: Date?, to: Date?) {
        self.bundleID = bundleID
        self.environment = environment
        self.from = from
        self.to = to
    }

    package static let columns = ["transaction_id", "original_transaction_id", "user_id", "product_id", "kind", "quantity",
                                 "price", "price_milliunits", "currency", "occurred_at", "environment", "storefront"]

    /// Calls `body` with each page of rows, in (occurred_at, original transaction, seq) order.
    package func forEachPage(on pool: PostgresPool, _ body: ([FinanceRow]) async throws -> Void) async throws {
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
                conditions.append("(occurred_at, original_transaction_id, seq) > (\(at)::timestamptz, \(bind(original))::text, \(bind(seq))::int)")
            }
            let rows = try await pool.query("""
                SELECT kind, transaction_id, original_transaction_id, user_id, product_id, quantity, price, currency, storefront,
                       environment, occurred_at, seq
                  FROM ledger.finance_rows
                 WHERE \(conditions.joined(separator: " AND "))
                 ORDER BY occurred_at, original_transaction_id, seq
                 LIMIT \(pageSize)
                """, parameters)
            var page: [FinanceRow] = []
            page.reserveCapacity(rows.count)
            for row in rows {
                page.append(FinanceRow(
                    kind: FinanceRow.Kind(rawValue: try row["kind"].string()) ?? .purchase, transactionID: try row["transaction_id"].string(),
                    originalTransactionID: try row["original_transaction_id"].string(), userID: row["user_id"].text,
                    productID: try row["product_id"].string(), quantity: try row["quantity"].int(),
                    price: row["price"].text.flatMap { Int64($0) }, currency: row["currency"].text,
                    occurredAt: try row["occurred_at"].date(), environment: AppleEnvironment(rawValue: try row["environment"].string()) ?? environment,
                    storefront: row["storefront"].text))
                after = (try row["occurred_at"].date(), try row["original_transaction_id"].string(), try row["seq"].int())
            }
            if !page.isEmpty { try await body(page) }
            if rows.count < pageSize { return }
        }
    }

    package static func csvHeader() -> String { columns.joined(separator: ",") + "\r\n" }

    /// One RFC 4180 record (CRLF-terminated; fields with commas, quotes or line breaks quoted).
    package static func csvLine(_ row: FinanceRow) -> String {
        fields(row).map { field in
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
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
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
        [row.transactionID, row.originalTransactionID, row.userID, row.productID, row.kind.rawValue, String(row.quantity),
         row.price.map(units), row.price.map { String($0) }, row.currency,
         RFC3339.string(row.occurredAt), row.environment.rawValue, row.storefront]
    }
}
