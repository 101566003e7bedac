import Foundation

/// Everything recorded for one app, and the answers derived from it.
///
/// State is a function of the *set* of facts: they may be applied in any order, and every question
/// is answered by replaying the facts in business order (Apple's signed time). So a rebuild from
/// zero equals the incremental state, and a late notification cannot re-grant what a later-signed
/// refund took away.
///
/// Time has two axes. **Valid time** (`at`): what the user was entitled to at an instant, by
/// everything the ledger knows — access runs by the dates inside the facts (purchase, expiry,
/// revocation, grants and consumptions when made), and ownership by `TransactionHistory`'s rule
/// (the first claim from the original purchase, transfers from when recorded). **Knowledge time**
/// (`knownAt`): only the facts recorded by then (`known(at:)`), so an answer given live at K is
/// given again by asking with `knownAt: K`. Both are one computation: there is no second code path
/// to disagree with the first.
package struct AppLedger: Sendable {
    package let bundleID: String
    private var facts: [RecordedFact] = []
    private var appFacts: [Int] = []
    private var transactionFacts: [String: [Int]] = [:]
    private var userFacts: [String: [Int]] = [:]
    /// Every original transaction a user has ever claimed or received.
    private var everOwned: [String: Set<String>] = [:]
    /// App transaction id → the facts withdrawing consent for it.
    private var rescissions: [String: [Int]] = [:]

    package init(bundleID: String) { self.bundleID = bundleID }

    package init(bundleID: String, facts: some Sequence<RecordedFact>) {
        self.init(bundleID: bundleID)
        for fact in facts { apply(fact) }
    }

    package mutating func apply(_ fact: RecordedFact) {
        let index = facts.count
        facts.append(fact)
        switch fact.event {
        case .appConfigured, .productConfigured, .currencyConfigured: appFacts.append(index)
        default: break
        }
        if let original = fact.event.originalTransactionID { transactionFacts[original, default: []].append(index) }
        switch fact.event {
        case .consumed(let c): userFacts[c.userID, default: []].append(index)
        case .currencyGranted(let g): userFacts[g.userID, default: []].append(index)
        case .spendReversed(let r): userFacts[r.userID, default: []].append(index)
        case .promotionalGranted(let g): userFacts[g.userID, default: []].append(index)
        case .promotionalRevoked(let r): userFacts[r.userID, default: []].append(index)
        case .balanceMoved(let m): userFacts[m.userID, default: []].append(index)
        case .appTransactionRecorded(let a): userFacts[a.userID, default: []].append(index)
        case .offerSigned(let o): userFacts[o.userID, default: []].append(index)
        case .retentionDecided(let r): userFacts[r.userID, default: []].append(index)
        case .userErased(let e): userFacts[e.userID, default: []].append(index)
        case .transactionClaimed(let c): everOwned[c.userID, default: []].insert(c.originalTransactionID)
        case .ownershipTransferred(let t):
            everOwned[t.toUserID, default: []].insert(t.originalTransactionID)
            everOwned[t.fromUserID, default: []].insert(t.originalTransactionID)
        case .consentRescinded(let c): rescissions[c.appTransactionID, default: []].append(index)
        default: break
        }
    }

    package var factCount: Int { facts.count }

    /// Every transaction of what `userID` owns now, oldest first (the user's purchases as Apple
    /// signed them: what offers name as the customer's transaction).
    package func transactions(ownedBy userID: String) -> [TransactionFacts] {
        (everOwned[userID] ?? []).sorted().map { history(of: $0) }.filter { $0.owner(at: .distantFuture) == userID }
            .flatMap(\.ordered).sorted { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }
    }

    /// Every original transaction `userID` ever claimed or received (the projection's owner index).
    package func transactions(everOwnedBy userID: String) -> [String] { (everOwned[userID] ?? []).sorted() }
    package var users: [String] { Array(Set(everOwned.keys).union(userFacts.keys)).sorted() }

    // MARK: Knowledge time

    /// The ledger as it stood at `instant`: the facts recorded by then.
    package func known(at instant: Date) -> AppLedger {
        AppLedger(bundleID: bundleID, facts: facts.filter { $0.recordedAt <= instant })
    }

    // MARK: Valid time

    private func businessOrdered(_ indices: [Int]) -> [RecordedFact] {
        indices.map { facts[$0] }.sorted(by: RecordedFact.businessOrder)
    }

    /// The app's configuration in force at `instant` (configuration takes effect when made).
    package func settings(at instant: Date) -> AppSettings {
        var settings = AppSettings()
        for fact in businessOrdered(appFacts) where fact.occurredAt <= instant {
            if case .appConfigured(let configured) = fact.event { settings = configured }
        }
        return settings
    }

    /// Every product and currency definition known, each effective from when it was configured (a
    /// purchase made before its product was first configured uses the first definition).
    package func catalogue() -> Catalogue {
        var catalogue = Catalogue()
        for fact in businessOrdered(appFacts) {
            switch fact.event {
            case .productConfigured(let definition): catalogue.define(definition, from: fact.occurredAt)
            case .currencyConfigured(let currency): catalogue.define(currency, from: fact.occurredAt)
            default: break
            }
        }
        return catalogue
    }

    func history(of originalTransactionID: String) -> TransactionHistory {
        TransactionHistory(
            originalTransactionID: originalTransactionID, facts: businessOrdered(transactionFacts[originalTransactionID] ?? []))
    }

    /// The share of one transaction its standing refunds took (thousandths of a percent, 100000:
    /// all of it), by the rule balances and books both follow (`TransactionHistory.refundShares`).
    package func refundedShare(ofTransaction transactionID: String, in originalTransactionID: String) -> Int {
        let history = history(of: originalTransactionID)
        guard let transaction = history.transactions[transactionID] else { return 0 }
        return Int(history.refundShares(of: transaction).filter { $0.until == nil }.map(\.share).reduce(0, +))
    }

    /// Who owns an original transaction at `instant` in valid time (nil: nobody yet); by default,
    /// now and from now on.
    package func owner(of originalTransactionID: String, at instant: Date = .distantFuture) -> String? {
        history(of: originalTransactionID).owner(at: instant)
    }

    /// Whether `originalTransactionID` gives whoever owns it an active entitlement at `instant`,
    /// priced by `catalogue` (a purchase stream read alone carries no catalogue of its own).
    package func givesActiveEntitlement(_ originalTransactionID: String, at instant: Date, catalogue: Catalogue) -> Bool {
        let history = history(of: originalTransactionID)
        guard let owner = history.owner(at: instant) else { return false }
        var builder = UserTimelineBuilder(userID: owner, catalogue: catalogue)
        builder.add(history)
        return builder.build().entitlements(at: instant).values.contains {
            $0.active && $0.originalTransactionID == originalTransactionID
        }
    }

    /// What `userID` owned at `instant` (valid time), by the facts recorded by `knownAt` (default:
    /// every fact known).
    package func userState(_ userID: String, at instant: Date, knownAt: Date? = nil) -> UserState {
        let ledger = knownAt.map { known(at: $0) } ?? self
        return ledger.timeline(of: userID, ownedAt: instant).state(at: instant)
    }

    /// The user's periods of access and balance entries, from every fact known, for the original
    /// transactions the user owns at `instant` (by default: owns now — what the projection stores,
    /// evaluated at "now" when asked).
    package func timeline(of userID: String, ownedAt instant: Date = .distantFuture) -> UserTimeline {
        let histories = (everOwned[userID] ?? []).sorted()
            .map { history(of: $0) }
            .filter { $0.owner(at: instant) == userID }
        var builder = UserTimelineBuilder(userID: userID, catalogue: catalogue(), appPurchase: settings(at: .distantFuture).appPurchase)
        for history in histories { builder.add(history) }
        builder.add(userFacts: businessOrdered(userFacts[userID] ?? []))
        var timeline = builder.build()
        timeline.consentRescindedAt = consentRescinded(for: histories)
        return timeline
    }

    /// The first withdrawal of consent for any app transaction the histories' purchases carry:
    /// Apple names the app's purchase, and every purchase made in that copy of the app carries it.
    private func consentRescinded(for histories: [TransactionHistory]) -> Date? {
        rescissionFacts(for: histories).map(\.occurredAt).min()
    }

    /// The withdrawals of consent for the app transactions the histories' purchases carry.
    private func rescissionFacts(for histories: [TransactionHistory]) -> [RecordedFact] {
        guard !rescissions.isEmpty else { return [] }
        let appTransactions = Set(histories.flatMap { $0.ordered.compactMap(\.appTransactionID) })
        return appTransactions.flatMap { rescissions[$0] ?? [] }.map { facts[$0] }
    }

    /// Every fact that touched `userID`, in recording order, with its evidence reference: the user's
    /// own actions, and each transaction's facts while the user owned it — including those recorded
    /// before anyone claimed it, which belong to its first owner.
    package func auditTrail(_ userID: String) -> [RecordedFact] {
        var indices = Set(userFacts[userID] ?? [])
        for original in everOwned[userID] ?? [] {
            let all = (transactionFacts[original] ?? []).sorted { facts[$0].sequence < facts[$1].sequence }
            let firstOwner = history(of: original).owners.first?.user
            var owner: String?
            for index in all {
                switch facts[index].event {
                case .transactionClaimed(let c) where owner == nil || owner == c.userID:
                    owner = c.userID
                case .ownershipTransferred(let t):
                    if t.fromUserID == userID || t.toUserID == userID { indices.insert(index) }
                    owner = t.toUserID
                    continue
                default: break
                }
                if owner == userID || (owner == nil && firstOwner == userID) { indices.insert(index) }
            }
        }
        let owned = (everOwned[userID] ?? []).map { history(of: $0) }
        let consent = rescissionFacts(for: owned).filter { fact in !indices.contains { facts[$0].sequence == fact.sequence } }
        return (indices.map { facts[$0] } + consent).sorted { $0.sequence < $1.sequence }
    }

    /// One row per money-moving fact, for finance: purchases, renewals, refunds, reversed refunds.
    package func financeRows(environment: AppleEnvironment = .production) -> [FinanceRow] {
        var owners: [String: String?] = [:]
        return FinanceView.rows(of: facts, environment: environment) { original in
            if let known = owners[original] { return known }
            let found = owner(of: original)
            owners[original] = found
            return found
        }
    }

    /// The finance rows of one original transaction, every environment (what the projection stores
    /// per transaction).
    package func financeRows(ofTransaction originalTransactionID: String) -> [FinanceRow] {
        // Sorted once and reduced once (a rebuild asks this for every transaction), and only the
        // environments the transaction was bought in: a row needs its purchase's environment.
        let own = businessOrdered(transactionFacts[originalTransactionID] ?? [])
        let currentOwner = TransactionHistory(originalTransactionID: originalTransactionID, facts: own).owner
        let environments = Set(own.compactMap { $0.event.transactionFacts?.environment })
        return AppleEnvironment.allCases.filter(environments.contains).flatMap { environment in
            FinanceView.rows(of: own, environment: environment) { _ in currentOwner }
        }
    }

    /// The facts of one original transaction's stream, in recording order (what its finance rows
    /// and metric contributions are computed from).
    package func facts(ofTransaction originalTransactionID: String) -> [RecordedFact] {
        (transactionFacts[originalTransactionID] ?? []).map { facts[$0] }
    }

    /// Every original transaction with facts in this ledger.
    package var originalTransactions: [String] { transactionFacts.keys.sorted() }
}
