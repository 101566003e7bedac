import Foundation

/// One currency's day in an app's books: what users held at its start, what was issued (paid for
/// in a store, or given free by the game), spent, expired and taken back by refunds, and what they
/// held at its end — the liability finance closes. Every figure is a sum of the users' wallet
/// movements, so it is re-derived from the events alone.
package struct CurrencyDay: Sendable, Equatable {
    package var currency: String
    /// Midnight UTC of the day.
    package var day: Date
    package var opening: Int64 = 0
    /// Granted by purchases and subscriptions' paid periods.
    package var issuedPaid: Int64 = 0
    /// Granted by the game server.
    package var issuedFree: Int64 = 0
    /// Spent, less spends taken back.
    package var spent: Int64 = 0
    package var expired: Int64 = 0
    /// Taken back by refunds, less refunds reversed.
    package var reversed: Int64 = 0
    /// Moved between accounts merged: across the app, nothing.
    package var moved: Int64 = 0

    package var closing: Int64 { opening + issuedPaid + issuedFree + moved - spent - expired - reversed }
}

package enum CurrencyLedger {
    static let dayLength: TimeInterval = 86_400

    /// Midnight UTC of the day `instant` falls in.
    package static func day(of instant: Date) -> Date {
        Date(timeIntervalSince1970: (instant.timeIntervalSince1970 / dayLength).rounded(.down) * dayLength)
    }

    /// The days from `from`'s to the one before `to`'s, for every currency any of the users ever
    /// held, in order of currency then day; `timelines` as known at the close asked about.
    package static func days(of timelines: [UserTimeline], from: Date, to: Date) -> [CurrencyDay] {
        var books = CurrencyBooks(from: from, to: to)
        for timeline in timelines { books.add(timeline) }
        return books.days
    }

    static func signed(_ movement: Wallet.Movement) -> Int64 {
        [.granted, .restored].contains(movement.kind) ? movement.amount : -movement.amount
    }

    static func add(_ movement: Wallet.Movement, to day: inout CurrencyDay) {
        let amount = movement.amount
        switch movement.kind {
        case .granted where movement.origin == .moved: day.moved += amount
        case .granted where movement.origin == .refundReversed: day.reversed -= amount
        case .granted where movement.origin == .purchase || movement.origin == .renewal: day.issuedPaid += amount
        case .granted: day.issuedFree += amount
        case .spent where movement.origin == .moved: day.moved -= amount
        case .spent: day.spent += amount
        case .restored: day.spent -= amount
        case .expired: day.expired += amount
        case .reversed: day.reversed += amount
        }
    }
}

/// A close's books filled one user at a time: what they hold is a figure per currency and day,
/// never the users' histories, so an app of millions of players is closed in the memory of one.
package struct CurrencyBooks: Sendable {
    let first: Date
    let end: Date
    private var books: [String: [Date: CurrencyDay]] = [:]
    private var openings: [String: Int64] = [:]

    /// The books of the days from `from`'s to the one before `to`'s.
    package init(from: Date, to: Date) {
        first = CurrencyLedger.day(of: from)
        end = CurrencyLedger.day(of: to - 0.001) + CurrencyLedger.dayLength
    }

    /// Counts one user's movements up to the end of the last day: those before the first day in
    /// its opening, the rest in their days.
    package mutating func add(_ timeline: UserTimeline) {
        let (_, movements) = Wallet.replay(timeline.balanceEntries, until: end - 0.001)
        for movement in movements {
            let currency = movement.currency
            if books[currency] == nil { books[currency] = [:] }
            guard movement.at >= first else {
                openings[currency, default: 0] += CurrencyLedger.signed(movement)
                continue
            }
            let date = CurrencyLedger.day(of: movement.at)
            CurrencyLedger.add(movement, to: &books[currency]![date, default: CurrencyDay(currency: currency, day: date)])
        }
    }

    /// Every day of every currency any user held, in order of currency then day, each day's
    /// closing the next one's opening.
    package var days: [CurrencyDay] {
        var result: [CurrencyDay] = []
        for currency in books.keys.sorted() {
            var opening = openings[currency] ?? 0
            var date = first
            while date < end {
                var entry = books[currency]?[date] ?? CurrencyDay(currency: currency, day: date)
                entry.opening = opening
                opening = entry.closing
                result.append(entry)
                date += CurrencyLedger.dayLength
            }
        }
        return result
    }
}
