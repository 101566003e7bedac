import Foundation
import LedgerFormats

/// A change as a webhook delivers it and the change feed lists it (`Change` in openapi.json). The
/// same bytes for both, written once when the change is derived: a re-sent delivery carries
/// exactly what the first one did.
package enum ChangeJSON {
    package static func bytes(_ change: Change, id: String, app: String, position: Int64) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 1536)
        json.object { json in
            json.key("id"); json.value(id)
            json.key("type"); json.value(change.kind.rawValue)
            json.key("app"); json.value(app)
            json.key("user_id"); json.value(change.userID)
            json.key("occurred_at"); json.value(RFC3339.microseconds(change.occurredAt))
            json.key("recorded_at"); json.value(RFC3339.microseconds(change.recordedAt))
            json.key("position"); json.value(position)
            json.key("change")
            json.object { json in
                let subject = change.subject
                json.field("entitlement", subject.entitlement)
                json.field("product_id", subject.productID)
                json.field("original_transaction_id", subject.originalTransactionID)
                // The purchase's store is in its key: said here so a receiver need not know how.
                json.field("store", subject.originalTransactionID.map { Store(purchaseKey: $0).rawValue })
                json.field("transaction_id", subject.transactionID)
                json.field("currency", subject.currency)
                json.field("amount", subject.amount)
                json.field("reason", subject.reason)
                json.key("from"); write(subject.from, into: &json)
                json.key("to"); write(subject.to, into: &json)
            }
            json.key("state")
            UserStateJSON.write(change.state, knownAt: change.recordedAt, into: &json)
        }
        return json.bytes
    }

    private static func write(_ value: Change.Value, into json: inout JSONWriter) {
        switch value {
        case .absent: json.value(nil as String?)
        case .date(let date): json.value(date.map(RFC3339.string))
        case .flag(let flag): json.value(flag)
        case .text(let text): json.value(text)
        case .number(let number): json.value(number)
        }
    }
}
