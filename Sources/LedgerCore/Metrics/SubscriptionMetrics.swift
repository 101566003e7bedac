import Foundation

/// One original transaction's part in the finance metrics: what the `users` projection stores per
/// original transaction (beside its finance rows) and sums by day. A point counts on the day it
/// happened; a span counts on each day whose end it covers (active subscriptions, MRR).
package struct MetricContribution: Sendable, Equatable, Hashable {
    package enum Kind: String, Sendable, CaseIterable {
        /// Spans: an auto-renewable subscription with access (dimension: product), its monthly
        /// recurring revenue (dimension: currency; a yearly plan counts 1/12 a month).
        case active, mrr
        /// Points, by product: first periods, renewals, subscriptions whose access ended for good
        /// (expired or refunded), free trials followed by a paid period.
        case new, renewed, churned, trialsConverted = "trials_converted"
        /// Points, by currency: refunds (count, and amount in milliunits; a reversal counts back),
        /// gross revenue (purchases and renewals of every product type, in milliunits).
        case refunds, refundedAmount = "refunded_amount", revenue
    }
    package var kind: Kind
    package var environment: AppleEnvironment
    package var dimension: String
    package var from: Date
    /// A span's end (exclusive); nil for a point.
    package var until: Date?
    package var value: Int64

    package init(kind: Kind, environment: AppleEnvironment, dimension: String, from: Date, until: Date? = nil, value: Int64) {
        self.kind = kind
        self.environment = environment
        self.dimension = dimension
        self.from = from
        self.until = until
        self.value = value
    }

    /// Whether it counts on the UTC day starting at `day`: a point that day, a span covering its end.
    package func counts(onDayStarting day: Date) -> Bool {
        let end = day.addingTimeInterval(86_400)
        guard let until else { return from >= day && from < end }
        return from < end && until >= end
    }
}

package enum SubscriptionMetrics {
    /// What the projection stores of `contributions`: the spans, each run of adjacent periods of
    /// the same product and price merged into one, and the points finance rows do not give (new,
    /// churned, trials converted). Renewals, revenue and refunds are summed from the finance rows,
    /// which hold one row per transaction already (`MetricsReader`): storing them again per
    /// transaction doubled the rebuild.
    package static func stored(of facts: [RecordedFact], originalTransactionID: String) -> [MetricContribution] {
        let history = TransactionHistory(originalTransactionID: originalTransactionID, facts: facts.sorted(by: RecordedFact.businessOrder))
        var spans: [MetricContribution] = []
        var points: [MetricContribution] = []
        for c in subscription(history) {
            if c.until == nil { points.append(c); continue }
            if let last = spans.lastIndex(where: { $0.kind == c.kind }), spans[last].until == c.from, spans[last].dimension == c.dimension,
                spans[last].value == c.value, spans[last].environment == c.environment
            {
                spans[last].until = c.until
            } else {
                spans.append(c)
            }
        }
        return spans + points
    }

    /// What one original transaction's facts contribute, every environment. Depends on those facts
    /// alone (an auto-renewable is a transaction with an expiry; no catalogue), so the projection
    /// recomputes it exactly when the transaction's stream changes, as it does its finance rows.
    package static func contributions(of facts: [RecordedFact], originalTransactionID: String) -> [MetricContribution] {
        let history = TransactionHistory(originalTransactionID: originalTransactionID, facts: facts.sorted(by: RecordedFact.businessOrder))
        var out: [MetricContribution] = []
        // Revenue, renewals and refunds exactly as finance books them (the projection reads them
        // from the finance rows): a reversal returns what its refund took.
        for environment in Set(history.ordered.map(\.environment)).sorted(by: { $0.rawValue < $1.rawValue }) {
            for row in FinanceView.rows(of: facts, environment: environment, owner: { _ in nil }) {
                if row.kind == .renewal {
                    out.append(.init(kind: .renewed, environment: environment, dimension: row.productID, from: row.occurredAt, value: 1))
                }
                guard let currency = row.currency else { continue }
                switch row.kind {
                case .purchase, .renewal:
                    if let price = row.price {
                        out.append(.init(kind: .revenue, environment: environment, dimension: currency, from: row.occurredAt, value: price))
                    }
                case .refund, .refundReversed:
                    out.append(
                        .init(
                            kind: .refunds, environment: environment, dimension: currency, from: row.occurredAt,
                            value: row.kind == .refund ? 1 : -1))
                    out.append(
                        .init(
                            kind: .refundedAmount, environment: environment, dimension: currency, from: row.occurredAt,
                            value: -(row.price ?? 0)))
                }
            }
        }
        out += subscription(history)
        return out
    }

    /// The spans and points of an auto-renewable: each period from its purchase to its expiry (cut
    /// short by a standing refund or an upgrade, and by the next period's start), new on the first,
    /// renewed on the others, a trial converted when a free period is followed by a paid one, and
    /// churned where the last period ends.
    static func subscription(_ history: TransactionHistory) -> [MetricContribution] {
        let periods = history.ordered.filter { $0.expiresDate != nil }
        var out: [MetricContribution] = []
        var lastEnd: (Date, TransactionFacts)?
        for (index, t) in periods.enumerated() {
            var end = t.expiresDate!
            if let revoked = history.revocationDate(of: t) { end = min(end, revoked) }
            if let upgraded = history.upgradeEnd(of: t) { end = min(end, upgraded) }
            if index + 1 < periods.count { end = min(end, periods[index + 1].purchaseDate) }
            // The original purchase is new (renewals are counted from the finance rows).
            if t.transactionID == t.originalTransactionID {
                out.append(.init(kind: .new, environment: t.environment, dimension: t.productID, from: t.purchaseDate, value: 1))
            }
            if index > 0, isTrial(periods[index - 1]), (t.price ?? 0) > 0 {
                out.append(
                    .init(kind: .trialsConverted, environment: t.environment, dimension: t.productID, from: t.purchaseDate, value: 1))
            }
            guard end > t.purchaseDate else { continue }
            out.append(.init(kind: .active, environment: t.environment, dimension: t.productID, from: t.purchaseDate, until: end, value: 1))
            if let price = t.price, let currency = t.currency {
                out.append(
                    .init(
                        kind: .mrr, environment: t.environment, dimension: currency, from: t.purchaseDate, until: end,
                        value: monthly(price, days: t.expiresDate!.timeIntervalSince(t.purchaseDate) / 86_400)))
            }
            if lastEnd.map({ end >= $0.0 }) ?? true { lastEnd = (end, t) }
        }
        if let (end, t) = lastEnd {
            out.append(.init(kind: .churned, environment: t.environment, dimension: t.productID, from: end, value: 1))
        }
        return out
    }

    /// Apple's introductory offer at no charge.
    static func isTrial(_ t: TransactionFacts) -> Bool { t.offerType == 1 && (t.price ?? 0) == 0 }

    /// A period's price as a month's: weekly ×52/12, monthly as is, quarterly /3, half-yearly /6, yearly /12.
    static func monthly(_ price: Int64, days: Double) -> Int64 {
        switch days {
        case ..<8.5: price * 52 / 12
        case ..<35: price
        case ..<100: price / 3
        case ..<200: price / 6
        default: price / 12
        }
    }
}

/// One value of a daily series.
package struct MetricPoint: Sendable, Equatable, Hashable {
    package var day: Date
    package var kind: MetricContribution.Kind
    package var environment: AppleEnvironment
    package var dimension: String
    package var value: Int64

    package init(day: Date, kind: MetricContribution.Kind, environment: AppleEnvironment, dimension: String, value: Int64) {
        self.day = day
        self.kind = kind
        self.environment = environment
        self.dimension = dimension
        self.value = value
    }
}

extension SubscriptionMetrics {
    /// Daily series from contributions, for the UTC days from `first` to `last` (midnights, both
    /// included); zero values left out. What the projection's SQL computes.
    package static func daily(_ contributions: [MetricContribution], from first: Date, through last: Date) -> [MetricPoint] {
        var sums: [MetricPoint: Int64] = [:]
        var day = first
        while day <= last {
            for c in contributions where c.counts(onDayStarting: day) {
                sums[MetricPoint(day: day, kind: c.kind, environment: c.environment, dimension: c.dimension, value: 0), default: 0] +=
                    c.value
            }
            day = day.addingTimeInterval(86_400)
        }
        return sums.compactMap {
            $0.value == 0
                ? nil
                : MetricPoint(
                    day: $0.key.day, kind: $0.key.kind, environment: $0.key.environment,
                    dimension: $0.key.dimension, value: $0.value)
        }
        .sorted {
            ($0.day, $0.kind.rawValue, $0.environment.rawValue, $0.dimension) < (
                $1.day, $1.kind.rawValue, $1.environment.rawValue, $1.dimension
            )
        }
    }

    /// UTC midnight of `date`'s day.
    package static func dayStart(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }
}
