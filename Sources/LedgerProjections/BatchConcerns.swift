import LedgerCore
import LedgerEventStore
import LedgerPostgres

/// Whom a batch of facts concerns, as far as the facts themselves say: claimants, both sides of a
/// transfer, a user's own facts; the original transactions Apple said something about (their
/// owners are looked up), and the apps whose catalogue changed (all their users). The `users` and
/// the `changes` projections find their users the same way.
package struct BatchConcerns {
    package var users: Set<UserKey> = []
    /// Facts about a transaction without a user: its owners are looked up.
    package var transactions: Set<TransactionKey> = []
    /// A catalogue change can touch any purchase: every user of the app.
    package var apps: Set<String> = []
    /// Ownership the batch records (claims, both sides of transfers).
    package var newOwners: [(bundleID: String, original: String, userID: String)] = []
    /// App transactions whose consent was withdrawn: every holder of a purchase made in one is looked up.
    package var appTransactions: Set<AppTransactionKey> = []

    package init(_ facts: some Sequence<(bundleID: String, fact: RecordedFact)>) {
        for (bundleID, fact) in facts {
            switch fact.event {
            case .transactionClaimed(let claim):
                newOwners.append((bundleID, claim.originalTransactionID, claim.userID))
                users.insert(UserKey(bundleID: bundleID, userID: claim.userID))
            case .ownershipTransferred(let transfer):
                newOwners.append((bundleID, transfer.originalTransactionID, transfer.toUserID))
                newOwners.append((bundleID, transfer.originalTransactionID, transfer.fromUserID))
                users.formUnion([transfer.fromUserID, transfer.toUserID].map { UserKey(bundleID: bundleID, userID: $0) })
            case .appConfigured, .productConfigured, .currencyConfigured:
                apps.insert(bundleID)
            case .consentRescinded(let rescission):
                appTransactions.insert(AppTransactionKey(bundleID: bundleID, appTransactionID: rescission.appTransactionID))
            default:
                if let userID = fact.event.userID {
                    users.insert(UserKey(bundleID: bundleID, userID: userID))
                } else if let original = fact.event.originalTransactionID {
                    transactions.insert(TransactionKey(bundleID: bundleID, originalTransactionID: original))
                }
            }
        }
    }

    /// The statements that find the rest of the users, and where each one's rows of `bundle_id`,
    /// `user_id` are.
    package struct Lookups: Sendable {
        package private(set) var trip = RoundTrip()
        fileprivate var slots: [RoundTrip.Slot] = []
        package var isEmpty: Bool { slots.isEmpty }

        fileprivate mutating func append(_ statement: PipelinedStatement) { slots.append(trip.add(statement)) }
    }

    /// The facts that carry the app transaction a purchase was made in (schema 0017's partial
    /// index is on these types).
    static let appTransactionCarriers = ["Purchased", "Restored", "Renewed", "Recovered"]

    /// The statements that find the rest of the users: the owners of the transactions, every user
    /// of the changed apps.
    package func lookups(in projection: UsersProjection) -> Lookups {
        var statements = Lookups()
        let keys = Array(transactions)
        if !keys.isEmpty {
            // One index probe per transaction, whatever the plan: the callers run on generic plans
            // (`PipelinedStatement.genericPlans`), and the generic plan of `= ANY($n)` on both
            // columns — its arrays of unknown length — was a sequential scan of the owners table
            // until it held ~10,000 rows (2.5–4 ms a call, a fifth of PostgreSQL's time at 4
            // ingestion connections). A lateral probe costs the same at any size.
            statements.append(
                PipelinedStatement(
                    """
                    SELECT o.bundle_id, o.user_id FROM unnest($1::text[], $2::text[]) AS k(b, t)
                     CROSS JOIN LATERAL (SELECT o.bundle_id, o.user_id FROM \(projection.owners) o
                                          WHERE o.bundle_id = k.b AND o.original_transaction_id = k.t OFFSET 0) AS o
                    """, [PostgresTextArray(keys.map(\.bundleID)), PostgresTextArray(keys.map(\.originalTransactionID))]))
        }
        if !appTransactions.isEmpty {
            // The purchases made in each app transaction (found by 0017's partial index), then
            // their owners.
            let keys = Array(appTransactions)
            statements.append(
                PipelinedStatement(
                    """
                    SELECT DISTINCT o.bundle_id, o.user_id FROM unnest($1::text[], $2::text[]) AS k(b, a)
                     CROSS JOIN LATERAL (\(EventStore.eventsSQL(whose: "appTransactionID", equals: "k.a", ofTypes: Self.appTransactionCarriers))) e
                      JOIN \(projection.owners) o ON o.bundle_id = k.b AND o.original_transaction_id = (e.data ->> 'originalTransactionID')
                     WHERE e.stream = \(LedgerStream.purchaseSQL(bundle: "k.b", originalTransactionID: "(e.data ->> 'originalTransactionID')"))
                    """, [PostgresTextArray(keys.map(\.bundleID)), PostgresTextArray(keys.map(\.appTransactionID))]))
        }
        for bundleID in apps {
            statements.append(
                PipelinedStatement(
                    """
                    SELECT $1::text AS bundle_id, user_id FROM \(projection.owners) WHERE bundle_id = $1
                     UNION SELECT $1, user_id FROM \(projection.timelines) WHERE bundle_id = $1
                    """, [bundleID]))
        }
        return statements
    }

    /// Adds the users the lookups found (`found`: the results of their round trip).
    package mutating func add(_ found: RoundTripResults, of lookups: Lookups) throws {
        for slot in lookups.slots {
            for row in found[slot] { users.insert(UserKey(bundleID: try row["bundle_id"].string(), userID: try row["user_id"].string())) }
        }
    }

    /// Which users each stream concerns: the app's and the user's own streams, and the purchase
    /// streams of what each owns or owned (`owned`: rows of `reads`' first statement).
    package static func streams(of users: [UserKey], owned: PostgresRows) throws -> [String: [UserKey]] {
        var concerned: [String: [UserKey]] = [:]
        for user in users {
            concerned[LedgerStream.app(user.bundleID), default: []].append(user)
            concerned[LedgerStream.consent(user.bundleID), default: []].append(user)
            concerned[LedgerStream.user(user.bundleID, userID: user.userID), default: []].append(user)
        }
        for row in owned {
            let user = UserKey(bundleID: try row["bundle_id"].string(), userID: try row["user_id"].string())
            concerned[LedgerStream.purchase(user.bundleID, originalTransactionID: try row["original_transaction_id"].string()), default: []]
                .append(user)
        }
        return concerned
    }
}

/// An app's purchase on one Apple account (`appTransactionId`), within one app of the ledger.
package struct AppTransactionKey: Hashable, Sendable {
    package var bundleID: String
    package var appTransactionID: String
}
