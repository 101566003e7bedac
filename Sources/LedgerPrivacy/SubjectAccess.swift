import Foundation
import LedgerAccess
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import LedgerProjections

/// Everything the ledger holds about one user of one app, as one JSON document: what a person
/// is owed when they ask what is kept about them (a subject-access request), and what support
/// reads before an erasure.
///
/// It gathers from every place a user id is written: the state and every fact that touched the
/// user (the same replay `/events` pages through), the raw Apple evidence those facts cite, the
/// appAccountTokens linked to the user, the Google Play purchase tokens of their purchases, the
/// changes announced about them and where their webhook deliveries stand, the backfills run for
/// them, and the admin actions aimed at them.
package struct SubjectAccess: Sendable {
    let pool: PostgresPool
    let reader: UserStateReader
    let sources: PrivacySources

    package init(pool: PostgresPool, reader: UserStateReader, sources: PrivacySources) {
        self.pool = pool
        self.reader = reader
        self.sources = sources
    }

    /// The document, read from the primary (an export must not miss a write a replica has not
    /// replayed yet).
    package func export(bundleID: String, userID: String, now: Date = Date()) async throws -> [UInt8] {
        let state = try await reader.currentState(bundleID: bundleID, userID: userID, at: now)
        let trail = try await reader.auditTrail(bundleID: bundleID, userID: userID)
        let digests = Array(Set(trail.compactMap(\.evidence))).sorted()
        let purchases = state.subscriptions.map(\.originalTransactionID) + state.purchases.map(\.originalTransactionID)
        let google = Array(Set(purchases.filter { Store(purchaseKey: $0) == .googlePlay })).sorted()
        let sections = sections(bundleID: bundleID, userID: userID, evidence: digests, google: google)
        let trip = sections.trip
        let held = try await pool.withConnection { connection in
            try connection.pipelinedTransaction { try $0.commit(with: trip) }
        }
        var json = JSONWriter(reservingCapacity: 16 * 1024)
        json.object { json in
            json.field("bundle_id", bundleID)
            json.field("user_id", userID)
            json.time("exported_at", now)
            json.key("state")
            UserStateJSON.write(state, knownAt: now, into: &json)
            json.array("events", trail) { json, fact in Self.write(fact, of: userID, into: &json) }
            Self.write(held, sections, of: userID, into: &json)
        }
        return json.bytes
    }

    /// One statement per place the user's id is written besides the log, each its owner's, in
    /// one round trip of one transaction (its BEGIN and COMMIT the caller's, who owns it); each
    /// section's rows are read by its own handle.
    struct Sections: Sendable {
        var trip = RoundTrip()
        var evidence, tokens, google, changes, deliveries, failures, backfills, actions: RoundTrip.Slot
    }

    func sections(bundleID: String, userID: String, evidence: [String], google: [String] = []) -> Sections {
        var trip = RoundTrip()
        let evidence = trip.add(sources.evidence(evidence))
        // Links are events of their own streams, one stream per token: a rare, whole-log read.
        let tokens = trip.add(
            EventStore.field(
                "appAccountToken", ofEventsOfType: UserErasures.tokenLinkType, forUser: userID,
                inStreamsStartingWith: UserErasures.tokenStreamsPrefix(bundleID)))
        let googlePurchases = trip.add(sources.googlePurchases(bundleID, google))
        let changes = trip.add(sources.changes(userID, bundleID))
        let deliveries = trip.add(sources.webhookDeliveries(userID, bundleID))
        let failures = trip.add(sources.webhookFailures(userID, bundleID))
        let backfills = trip.add(sources.backfills(userID, bundleID))
        let actions = trip.add(AuditLog.actions(aimedAt: userID, bundleID: bundleID))
        return Sections(
            trip: trip, evidence: evidence, tokens: tokens, google: googlePurchases, changes: changes, deliveries: deliveries,
            failures: failures,
            backfills: backfills,
            actions: actions)
    }

    /// The other party of a transfer or of a merge is somebody else's personal data: the document
    /// says only that there was one.
    static let anotherUser = "(another user)"

    static func write(_ fact: RecordedFact, of userID: String, into json: inout JSONWriter) {
        var event = fact.event
        switch event {
        case .ownershipTransferred(var transfer):
            if transfer.fromUserID != userID { transfer.fromUserID = anotherUser }
            if transfer.toUserID != userID { transfer.toUserID = anotherUser }
            event = .ownershipTransferred(transfer)
        case .balanceMoved(var move):
            move.counterpartUserID = anotherUser
            event = .balanceMoved(move)
        default: break
        }
        json.object { json in
            json.field("position", fact.sequence)
            json.field("type", event.typeName)
            json.time("occurred_at", fact.occurredAt)
            json.time("recorded_at", fact.recordedAt)
            json.key("data")
            if let data = try? event.encodedData() { json.raw(String(decoding: data, as: UTF8.self)) } else { json.value(nil as String?) }
            json.key("evidence"); json.value(fact.evidence)
        }
    }

    /// A change as announced, but an `ownership.transferred` names the other user only as
    /// `anotherUser`.
    static func change(_ body: String, of userID: String) -> String {
        guard body.contains(#""type":"ownership.transferred""#),
            var change = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any],
            var subject = change["change"] as? [String: Any]
        else { return body }
        for side in ["from", "to"] where subject[side] as? String != userID { subject[side] = anotherUser }
        change["change"] = subject
        guard let data = try? JSONSerialization.data(withJSONObject: change, options: [.sortedKeys]) else { return body }
        return String(decoding: data, as: UTF8.self)
    }

    static func write(_ rows: RoundTripResults, _ sections: Sections, of userID: String, into json: inout JSONWriter) {
        json.objects("evidence", rows[sections.evidence]) { json, row in
            json.field("digest", row["digest"].optionalString())
            json.field("kind", row["kind"].optionalString())
            json.time("received_at", try? row["received_at"].date())
            // JWS, receipts (base64) and V1 notifications are text; anything else is base64.
            let body = (try? row["body"].bytes()) ?? []
            json.field("body", String(validating: body, as: UTF8.self) ?? Data(body).base64EncodedString())
            // Emptied by an erasure: it carried an erased user's appAccountToken.
            if let shredded = try? row["shredded_at"].date() { json.time("shredded_at", shredded) }
        }
        json.objects("app_account_tokens", rows[sections.tokens]) { json, row in
            json.field("app_account_token", row["value"].optionalString()?.lowercased())
            json.time("linked_at", try? row["recorded_at"].date())
        }
        json.objects("google_play_purchases", rows[sections.google]) { json, row in
            json.field("purchase_key", row["purchase_key"].optionalString())
            json.field("product_id", row["product_id"].optionalString())
            json.field("purchase_token", row["purchase_token"].optionalString())
            json.time("paid_at", try? row["paid_at"].date())
            json.time("acknowledged_at", try? row["settled_at"].date())
        }
        json.array("changes", Array(rows[sections.changes])) { json, row in
            json.raw(Self.change(row["body"].optionalString() ?? "null", of: userID))
        }
        json.objects("webhook_deliveries", rows[sections.deliveries]) { json, row in
            json.field("webhook", row["webhook"].optionalString())
            json.field("delivered_position", try? row["delivered"].int64())
            json.field("wanted_position", try? row["wanted"].int64())
            json.field("attempts", try? row["attempts"].int64())
            json.key("last_error"); json.value(row["last_error"].optionalString())
            json.time("next_attempt_at", try? row["next_attempt_at"].date())
        }
        json.objects("webhook_failures", rows[sections.failures]) { json, row in
            json.field("webhook", row["webhook"].optionalString())
            json.field("position", try? row["position"].int64())
            json.field("attempts", try? row["attempts"].int64())
            json.key("last_error"); json.value(row["last_error"].optionalString())
            json.time("parked_at", try? row["parked_at"].date())
        }
        json.objects("backfills", rows[sections.backfills]) { json, row in
            json.field("reference", row["reference"].optionalString())
            json.time("done_at", try? row["done_at"].date())
        }
        json.objects("admin_actions", rows[sections.actions]) { json, row in
            json.field("position", try? row["position"].int64())
            json.time("recorded_at", try? row["recorded_at"].date())
            json.field("actor", row["actor"].optionalString())
            json.field("action", row["action"].optionalString())
            json.field("target", row["target"].optionalString())
            json.key("after")
            json.raw(row["after"].optionalString() ?? "null")
        }
    }
}

extension JSONWriter {
    /// A member holding one object per row, its fields written by `fields`.
    fileprivate mutating func objects(_ name: StaticString, _ rows: PostgresRows, _ fields: (inout JSONWriter, PostgresRow) -> Void) {
        array(name, Array(rows)) { json, row in json.object { fields(&$0, row) } }
    }

    /// A time as the API writes times (RFC 3339), null when absent: the document keeps one shape.
    fileprivate mutating func time(_ name: StaticString, _ date: Date?) {
        key(name)
        value(date.map(RFC3339.string))
    }
}
