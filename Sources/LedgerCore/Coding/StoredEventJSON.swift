import Foundation
import LedgerFormats

/// The stored JSON of the two events every purchase records (its transaction and its claim),
/// written by hand — byte for byte what `LedgerEvent.encoder` writes, or nothing.
///
/// Why: `JSONEncoder` was 3 % of ingestion's CPU. Why byte for byte: event ids derive
/// from event data, so a request repeated after an upgrade must produce the same bytes to be
/// recognised as the same event. So this writes only values whose JSONEncoder spelling it copies
/// exactly — strings of printable ASCII without `"`, `\` or `/` (JSONEncoder escapes the slash),
/// dates on the millisecond grid below 2⁵³ — and answers nil for anything else, which the caller
/// then encodes with JSONEncoder. A property test holds both to the same bytes.
enum StoredEventJSON {
    /// `TransactionFacts` with its keys sorted as JSONEncoder's `.sortedKeys` sorts them.
    static func bytes(_ facts: TransactionFacts) -> [UInt8]? {
        var json = Writer()
        json.bytes.reserveCapacity(512)
        json.bytes.append(UInt8(ascii: "{"))
        json.string("appAccountToken", facts.appAccountToken?.uuidString)
        json.string("appTransactionID", facts.appTransactionID)
        json.string("billingPlanType", facts.billingPlanType)
        // A commitment is a nested object, rare enough to leave to JSONEncoder.
        if facts.commitment != nil { return nil }
        json.string("currency", facts.currency)
        json.string("environment", facts.environment.rawValue)
        json.date("expiresDate", facts.expiresDate)
        json.literal("isUpgraded", facts.isUpgraded ? "true" : "false")
        json.string("offerDiscountType", facts.offerDiscountType)
        json.string("offerIdentifier", facts.offerIdentifier)
        json.string("offerPeriod", facts.offerPeriod)
        json.integer("offerType", facts.offerType.map(Int64.init))
        json.date("originalPurchaseDate", facts.originalPurchaseDate)
        json.string("originalTransactionID", facts.originalTransactionID)
        json.string("ownership", facts.ownership.rawValue)
        json.integer("price", facts.price)
        json.string("productID", facts.productID)
        json.date("purchaseDate", facts.purchaseDate)
        json.integer("quantity", Int64(facts.quantity))
        json.date("revocationDate", facts.revocationDate)
        json.integer("revocationReason", facts.revocationReason.map(Int64.init))
        json.date("signedDate", facts.signedDate)
        json.string("store", facts.store?.rawValue)
        json.string("storefront", facts.storefront)
        json.string("transactionID", facts.transactionID)
        json.string("webOrderLineItemID", facts.webOrderLineItemID)
        return json.finished()
    }

    static func bytes(_ claim: Claim) -> [UInt8]? {
        var json = Writer()
        json.bytes.append(UInt8(ascii: "{"))
        json.string("originalTransactionID", claim.originalTransactionID)
        json.string("userID", claim.userID)
        return json.finished()
    }

    /// An object's members in the order given, nil members left out (as synthesised `Encodable`
    /// leaves out nil optionals); `copied` turns false at the first value it does not copy.
    private struct Writer {
        var bytes: [UInt8] = []
        var copied = true
        var first = true

        mutating func key(_ name: StaticString) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes.append(UInt8(ascii: "\""))
            bytes += UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            bytes += "\":".utf8
        }

        mutating func string(_ name: StaticString, _ value: String?) {
            guard copied, var text = value else { return }
            guard text.withUTF8({ $0.allSatisfy(Self.isPlain) }) else { copied = false; return }
            key(name)
            bytes.append(UInt8(ascii: "\""))
            bytes += text.utf8
            bytes.append(UInt8(ascii: "\""))
        }

        /// Printable ASCII that JSONEncoder writes as it is.
        static func isPlain(_ byte: UInt8) -> Bool {
            byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: "/")
        }

        mutating func integer(_ name: StaticString, _ value: Int64?) {
            guard copied, let value else { return }
            key(name)
            bytes += String(value).utf8
        }

        mutating func literal(_ name: StaticString, _ text: StaticString) {
            guard copied else { return }
            key(name)
            bytes += UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        }

        /// Milliseconds computed as JSONEncoder's `.millisecondsSince1970` computes them; written
        /// only when integral (JSONEncoder writes those as integers, others in its own float form).
        mutating func date(_ name: StaticString, _ value: Date?) {
            guard copied, let value else { return }
            let milliseconds = value.timeIntervalSince1970 * 1000.0
            guard milliseconds == milliseconds.rounded(), abs(milliseconds) < 9_007_199_254_740_992 else { copied = false; return }
            key(name)
            bytes += String(Int64(milliseconds)).utf8
        }

        mutating func finished() -> [UInt8]? {
            guard copied else { return nil }
            bytes.append(UInt8(ascii: "}"))
            return bytes
        }
    }
}
