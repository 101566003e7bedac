import LedgerCore
import LedgerPostgres

/// Finance rows as column arrays, for one `INSERT … SELECT * FROM unnest(…)`.
struct FinanceColumns {
    var bundleIDs: [String] = [], originals: [String] = [], seqs: [String] = [], kinds: [String] = [], transactionIDs: [String] = []
    var userIDs: [String?] = [], productIDs: [String] = [], quantities: [String] = [], prices: [String?] = [], currencies: [String?] = []
    var storefronts: [String?] = [], environments: [String] = [], times: [String] = [], recorded: [String] = []
    var offerTypes: [String?] = [], offerIDs: [String?] = [], offerDiscounts: [String?] = [], positions: [String?] = []

    mutating func append(_ transaction: TransactionKey, seq: Int, _ row: FinanceRow) {
        bundleIDs.append(transaction.bundleID); originals.append(transaction.originalTransactionID); seqs.append(String(seq))
        kinds.append(row.kind.rawValue); transactionIDs.append(row.transactionID); userIDs.append(row.userID)
        productIDs.append(row.productID); quantities.append(String(row.quantity)); prices.append(row.price.map { String($0) })
        currencies.append(row.currency); storefronts.append(row.storefront); environments.append(row.environment.rawValue)
        times.append(row.occurredAt.postgresText)
        recorded.append(row.recordedAt.postgresText)
        offerTypes.append(row.offerType.map { String($0) }); offerIDs.append(row.offerIdentifier);
        offerDiscounts.append(row.offerDiscountType)
        positions.append(row.position.map { String($0) })
    }

    var parameters: [(any PostgresBindable)?] {
        [
            PostgresTextArray(bundleIDs), PostgresTextArray(originals), PostgresTextArray(seqs), PostgresTextArray(kinds),
            PostgresTextArray(transactionIDs), PostgresNullableTextArray(userIDs), PostgresTextArray(productIDs),
            PostgresTextArray(quantities),
            PostgresNullableTextArray(prices), PostgresNullableTextArray(currencies), PostgresNullableTextArray(storefronts),
            PostgresTextArray(environments), PostgresTextArray(times), PostgresTextArray(recorded),
            PostgresNullableTextArray(offerTypes), PostgresNullableTextArray(offerIDs), PostgresNullableTextArray(offerDiscounts),
            PostgresNullableTextArray(positions),
        ]
    }
}

/// Metric contributions as unnest() columns, for one insert of a batch's rows.
struct MetricColumns {
    private var columns: [[String?]] = Array(repeating: [], count: 8)

    var isEmpty: Bool { columns[0].isEmpty }

    mutating func append(_ transaction: TransactionKey, _ c: MetricContribution) {
        let row: [String?] = [
            transaction.bundleID, transaction.originalTransactionID, c.kind.rawValue, c.environment.rawValue, c.dimension,
            PostgresTimestamp.format(c.from), c.until.map(PostgresTimestamp.format), String(c.value),
        ]
        for (index, value) in row.enumerated() { columns[index].append(value) }
    }

    var parameters: [(any PostgresBindable)?] { columns.map { PostgresNullableTextArray($0) } }
}
