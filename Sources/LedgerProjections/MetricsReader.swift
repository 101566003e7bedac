import Foundation
import LedgerCore
import LedgerPostgres

/// The finance metrics' daily series, summed from the stored contributions and the finance rows
/// (the active version of the `users` projection): `SubscriptionMetrics.daily`'s contract over
/// every contribution, in three statements whatever the range. Points are summed per day; spans by a running sum of their starts and ends — a span counts
/// on the days from its start's to the day before its end's, so each adds +value on the first and
/// −value after the last — rather than by joining every day with every span.
package struct MetricsReader: Sendable {
    let reads: ReadReplicas

    package init(reads: ReadReplicas) { self.reads = reads }

    /// Every non-zero value for the UTC days from `first` through `last` (midnights), one
    /// environment; one store's purchases only when `store` is given.
    package func daily(
        bundleID: String, environment: AppleEnvironment, store: Store? = nil, from first: Date, through last: Date
    ) async throws -> [MetricPoint] {
        let end = last.addingTimeInterval(86_400)
        let storeName = store?.rawValue
        var trip = RoundTrip()
        let pointsRead = trip.add(
            PipelinedStatement(
                """
                SELECT kind, dimension, date_trunc('day', from_at) AS day, sum(value)::bigint AS value FROM ledger.metric_contributions
                 WHERE bundle_id = $1 AND environment = $2 AND until_at IS NULL AND from_at >= $3 AND from_at < $4
                   AND \(Self.storeMatches("original_transaction_id", "$5"))
                 GROUP BY 1, 2, 3
                """, [bundleID, environment.rawValue, first, end, storeName]))
        let spansRead = trip.add(
            PipelinedStatement(
                """
                SELECT kind, dimension, day, sum(value)::bigint AS value FROM (
                    SELECT kind, dimension, date_trunc('day', from_at) AS day, value FROM ledger.metric_contributions
                     WHERE bundle_id = $1 AND environment = $2 AND until_at IS NOT NULL AND from_at < $3
                       AND \(Self.storeMatches("original_transaction_id", "$4"))
                    UNION ALL
                    SELECT kind, dimension, date_trunc('day', until_at - interval '1 day') + interval '1 day', -value FROM ledger.metric_contributions
                     WHERE bundle_id = $1 AND environment = $2 AND until_at IS NOT NULL AND from_at < $3 AND until_at < $3 + interval '1 day'
                       AND \(Self.storeMatches("original_transaction_id", "$4"))
                ) deltas GROUP BY 1, 2, 3 ORDER BY 3
                """, [bundleID, environment.rawValue, end, storeName]))
        // Renewals, revenue and refunds: from the finance rows, one per transaction already.
        let moneyRead = trip.add(
            PipelinedStatement(
                """
                SELECT kind, dimension, day, sum(value)::bigint AS value FROM (
                    SELECT CASE WHEN f.kind = 'renewal' AND m.kind = 'renewed' THEN 'renewed'
                                WHEN f.kind IN ('purchase', 'renewal') THEN 'revenue'
                                WHEN m.kind = 'refunds' THEN 'refunds' ELSE 'refunded_amount' END AS kind,
                           CASE WHEN m.kind = 'renewed' THEN f.product_id ELSE f.currency END AS dimension,
                           date_trunc('day', f.occurred_at) AS day,
                           CASE WHEN m.kind = 'renewed' THEN 1
                                WHEN f.kind IN ('purchase', 'renewal') THEN f.price
                                WHEN m.kind = 'refunds' THEN CASE f.kind WHEN 'refund' THEN 1 ELSE -1 END
                                ELSE -coalesce(f.price, 0) END AS value
                      FROM ledger.finance_rows f
                      JOIN (VALUES ('renewed'), ('money'), ('refunds')) AS m(kind)
                        ON (m.kind = 'renewed' AND f.kind = 'renewal')
                        OR (m.kind = 'money' AND (f.kind IN ('refund', 'refund_reversed') OR f.price IS NOT NULL))
                        OR (m.kind = 'refunds' AND f.kind IN ('refund', 'refund_reversed'))
                     WHERE f.bundle_id = $1 AND f.environment = $2 AND f.occurred_at >= $3 AND f.occurred_at < $4
                       AND (m.kind = 'renewed' OR f.currency IS NOT NULL)
                       AND \(Self.storeMatches("f.original_transaction_id", "$5"))
                ) rows GROUP BY 1, 2, 3
                """, [bundleID, environment.rawValue, first, end, storeName]))
        let series = trip
        let results = try await reads.read(atLeast: await reads.requiredForAll()) { try $0.send(series) }
        var points: [MetricPoint] = []
        for row in Array(results[pointsRead]) + Array(results[moneyRead]) {
            guard let kind = MetricContribution.Kind(rawValue: try row["kind"].string()) else { continue }
            let value = try row["value"].int64()
            if value != 0 {
                points.append(
                    MetricPoint(
                        day: try row["day"].date(), kind: kind, environment: environment, dimension: try row["dimension"].string(),
                        value: value))
            }
        }
        // Spans: walk the days, applying each day's deltas to the running totals.
        var deltas: [(day: Date, series: SeriesKey, value: Int64)] = []
        for row in results[spansRead] {
            guard let kind = MetricContribution.Kind(rawValue: try row["kind"].string()) else { continue }
            deltas.append(
                (try row["day"].date(), SeriesKey(kind: kind, dimension: try row["dimension"].string()), try row["value"].int64()))
        }
        var running: [SeriesKey: Int64] = [:]
        var next = 0
        var day = deltas.first.map { min($0.day, first) } ?? first
        while day <= last {
            while next < deltas.count, deltas[next].day <= day {
                running[deltas[next].series, default: 0] += deltas[next].value
                next += 1
            }
            if day >= first {
                for (series, value) in running where value != 0 {
                    points.append(
                        MetricPoint(day: day, kind: series.kind, environment: environment, dimension: series.dimension, value: value))
                }
            }
            day = day.addingTimeInterval(86_400)
        }
        return points.sorted {
            ($0.day, $0.kind.rawValue, $0.environment.rawValue, $0.dimension) < (
                $1.day, $1.kind.rawValue, $1.environment.rawValue, $1.dimension
            )
        }
    }

    /// A purchase's store is in its key (`Store(purchaseKey:)`): Google's start with `gp:`. A NULL
    /// `parameter` matches every store.
    static func storeMatches(_ column: String, _ parameter: String) -> String {
        "(\(parameter)::text IS NULL OR starts_with(\(column), '\(Store.googlePlayKeyPrefix)') = (\(parameter)::text = '\(Store.googlePlay.rawValue)'))"
    }

    struct SeriesKey: Hashable {
        var kind: MetricContribution.Kind
        var dimension: String
    }
}
