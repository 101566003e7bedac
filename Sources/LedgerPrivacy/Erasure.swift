import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerFormats
import LedgerPostgres
import LedgerProjections
import LedgerProofs
import Logging

/// Erasing a user (`DELETE /v1/apps/{b}/users/{u}`, `ledger erase`): afterwards the user id and
/// the appAccountTokens that stood for the user are nowhere in the database, while every purchase,
/// renewal and refund stays in the books under a pseudonym (`erased:…`).
///
/// In one transaction, as the only writer of the user's stream: the tokens are found (links the
/// user holds, tokens on the purchases the user held), then the raw evidence that carries one
/// (a JWS, a receipt and Apple's answer to it, a notification — searched decoded, nested JWS
/// included); `ledger.erase` (schema/0024) replaces the id and each token by its pseudonym in the
/// log, re-chains the streams it touched, replaces them everywhere else and empties that evidence;
/// last, a `userErased` fact on the pseudonym's stream records what was done, by whom — and
/// through the change feed tells the app's game servers (`user.erased`).
///
/// Replacing, not deleting, keeps the books: finance rows keep their amounts and dates, balances
/// and debts stay where they were, a rebuild from zero derives the same state. The pseudonym owns
/// nothing anyone can reach: the id now names a new, empty account, and a purchase the erased
/// user held goes to whoever presents it next, whatever the restore policy (`Decide.claim`).
package struct UserErasures: Sendable {
    let store: EventStore
    let freshness: ProjectionFreshness
    /// The evidence is LedgerIngestion's: its statement comes from there.
    let sources: PrivacySources
    let logger: Logger

    package init(store: EventStore, freshness: ProjectionFreshness, sources: PrivacySources, logger: Logger) {
        self.store = store
        self.freshness = freshness
        self.sources = sources
        self.logger = logger
    }

    /// What an erasure did: the answer to the request, and the facts of the record.
    package struct Report: Sendable, Equatable {
        package var bundleID: String
        package var pseudonym: String
        package var erasedAt: Date
        package var tokens: Int
        package var eventsRewritten: Int
        package var rowsRewritten: Int
        package var evidenceShredded: Int
        package var streamsRechained: Int
        /// Where the record of the erasure is in the log (a read after it sees the erasure).
        package var position: LogPosition?
    }

    /// Erases `userID` of `bundleID`; `actor` names who asked (an API key's name, `cli`). A user
    /// the app's log never named is `unknown_user` (an erasure done before included: the id names
    /// nothing any more). Answered once the projection has applied the record, so a read after
    /// the answer (on any server or replica, with its `Ledger-Position`) sees the erasure.
    package func erase(bundleID: String, userID: String, actor: String) async throws -> Report {
        let pseudonym = ErasedUser.makePseudonym()
        let streams = [LedgerStream.user(bundleID, userID: userID), LedgerStream.user(bundleID, userID: pseudonym)]
        let unshredded = sources.unshreddedEvidence
        let forgetGoogle = sources.forgetGooglePurchases
        let holdChanges = sources.holdChanges
        let report = try await store.serialized(on: streams) { locked in
            let connection = locked[0].connection
            guard try Self.isKnown(userID, bundleID: bundleID, on: connection) else {
                throw LedgerError(.unknownUser, "the app's log names no user \(userID): nothing to erase (an erased id names nothing)")
            }
            // The projections' batches wait for the erasure (a first projection of the user, in
            // flight, would otherwise write the old id after the rewrite: a change projection's
            // clock row was seen so). The change projection's lock first: its batch ends by
            // moving its checkpoint row, which the second statement holds.
            try connection.query(holdChanges.sql, holdChanges.parameters)
            try connection.query(ProjectionRegistry.holdBatchesSQL)
            try ProofTree.hold(on: connection)
            let held = try Self.purchasesHeld(by: userID, bundleID: bundleID, on: connection)
            let tokens = try Self.tokens(of: userID, carriedBy: held, bundleID: bundleID, on: connection)
            let shred = try Self.evidenceCarrying(tokens, about: held, bundleID: bundleID, unshredded: unshredded, on: connection)
            let google = held.map { String($0.dropFirst(LedgerStream.purchase(bundleID, originalTransactionID: "").count)) }
                .filter { Store(purchaseKey: $0) == .googlePlay }
            if !google.isEmpty {
                let forget = forgetGoogle(bundleID, google)
                try connection.query(forget.sql, forget.parameters)
            }
            // Each token in both spellings the log uses: upper case in facts, lower in stream names.
            var old: [String] = [], new: [String] = []
            for token in tokens {
                let replacement = UUID()
                old += [token.uuidString, token.uuidString.lowercased()]
                new += [replacement.uuidString, replacement.uuidString.lowercased()]
            }
            let done = try connection.query(
                """
                SELECT events_rewritten, rows_rewritten, evidence_shredded, rechained::text AS rechained
                  FROM ledger.erase($1, $2, $3, $4::text[], $5::text[], $6::text[])
                """, [bundleID, userID, pseudonym, PostgresTextArray(old), PostgresTextArray(new), PostgresTextArray(shred)])[0]
            let rechained = try JSONDecoder().decode([UserErasure.Rechained].self, from: Data(try done["rechained"].string().utf8))
            // The proof tree keeps its leaves; the rewritten events' salts go with the identity.
            try ProofTree.forgetRewritten(inStreams: rechained.map(\.stream), on: connection)
            let erasure = UserErasure(
                userID: pseudonym, actor: actor, tokens: tokens.count, eventsRewritten: try done["events_rewritten"].int(),
                evidenceShredded: try done["evidence_shredded"].int(), rechained: rechained)
            let now = Date()
            let (_, event) = try StoredFacts.newEvent(
                .userErased(erasure), bundleID: bundleID, id: StableID.make(streams[1], LedgerEventType.userErased.rawValue, pseudonym),
                occurredAt: now)
            let appended = try locked[1].append([event], expectedVersion: .any)
            return Report(
                bundleID: bundleID, pseudonym: pseudonym, erasedAt: now, tokens: tokens.count, eventsRewritten: erasure.eventsRewritten,
                rowsRewritten: try done["rows_rewritten"].int(), evidenceShredded: erasure.evidenceShredded,
                streamsRechained: rechained.count,
                position: appended.events.last?.position)
        }
        if let position = report.position { try await freshness.wait(for: position, logger: logger) }
        logger.notice(
            "user erased",
            metadata: ["bundle_id": "\(bundleID)", "pseudonym": "\(report.pseudonym)", "events_rewritten": "\(report.eventsRewritten)"])
        return report
    }

    /// The link facts of appAccountTokens: LedgerIngestion's (`AppAccountTokens`), one stream per
    /// token (`token:<bundle>:<token>`).
    static let tokenLinkType = "AppAccountTokenLinked"
    static func tokenStreamsPrefix(_ bundleID: String) -> String { "token:\(bundleID):" }

    /// Whether the app's log knows the user: its own stream, or a fact naming it as a user (a
    /// purchase claimed or moved, a token linked) — not merely a value equal to the id.
    static func isKnown(_ userID: String, bundleID: String, on connection: PostgresConnection) throws -> Bool {
        try EventStore.knows(
            stream: LedgerStream.user(bundleID, userID: userID), orUser: userID, namedBy: ["userID", "fromUserID", "toUserID"],
            inApp: bundleID,
            on: connection)
    }

    /// The streams of the purchases the user held (or holds): those whose facts name the user.
    /// Read once, for the tokens and the evidence both.
    static func purchasesHeld(by userID: String, bundleID: String, on connection: PostgresConnection) throws -> [String] {
        // Every purchase stream of the app begins as `LedgerStream.purchase` writes it, up to the
        // original transaction id.
        try EventStore.streams(
            startingWith: LedgerStream.purchase(bundleID, originalTransactionID: ""), mentioning: userID, on: connection)
    }

    /// The appAccountTokens that stand for the user: those whose link the user holds last, and
    /// those on the purchases the user held (`held`: the app set them for this user) unless
    /// another user holds their link now.
    static func tokens(of userID: String, carriedBy held: [String], bundleID: String, on connection: PostgresConnection) throws -> [UUID] {
        try EventStore.linkedValues(
            "appAccountToken", ofType: tokenLinkType, inStreamsStartingWith: tokenStreamsPrefix(bundleID), heldBy: userID, carriedBy: held,
            on: connection
        ).compactMap { UUID(uuidString: $0) }.sorted { $0.uuidString < $1.uuidString }
    }

    /// The evidence that carries one of `tokens`: among the evidence cited by the app's events
    /// that mention one or that are about a purchase the user held (`held`: a notification's facts
    /// may leave the token out, its JWS does not), and the receipts their verifyReceipt answers
    /// answer, what holds one once decoded (`EvidenceSearch`). Two reads: the log's citations
    /// (the store's), then that evidence (`unshredded`, LedgerIngestion's).
    static func evidenceCarrying(
        _ tokens: [UUID], about held: [String], bundleID: String, unshredded: (_ digests: [String]) -> PipelinedStatement,
        on connection: PostgresConnection
    ) throws -> [String] {
        let google = held.contains {
            Store(purchaseKey: String($0.dropFirst(LedgerStream.purchase(bundleID, originalTransactionID: "").count))) == .googlePlay
        }
        guard !tokens.isEmpty || google else { return [] }
        let quoted = tokens.flatMap { ["\"\($0.uuidString)\"", "\"\($0.uuidString.lowercased())\""] }
        let cited = try EventStore.evidenceCited(inApp: bundleID, byFactsMentioning: quoted, orIn: held, on: connection)
        guard !cited.isEmpty else { return [] }
        let statement = unshredded(cited)
        let rows = try connection.query(statement.sql, statement.parameters)
        var shred: Set<String> = []
        for row in rows {
            let digest = try row["digest"].string()
            let answered = row["answered"].optionalString()
            if row["kind"].optionalString()?.hasPrefix("google_") == true {
                // Google's answers about a purchase the user held carry the app's account id for
                // them (in clear, not as the UUID the ledger links): every one goes.
                shred.insert(digest)
            } else if EvidenceSearch.mentions(try row["body"].bytes(), anyOf: tokens) {
                shred.insert(digest)
                if let answered { shred.insert(answered) }
            } else if let answered, EvidenceSearch.mentions(try row["answered_body"].bytes(), anyOf: tokens) {
                shred.formUnion([digest, answered])
            }
        }
        return shred.sorted()
    }
}
