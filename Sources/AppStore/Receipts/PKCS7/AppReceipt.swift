import Foundation
import LedgerCore
import SwiftASN1

/// What a legacy app receipt says, read from its ASN.1 payload (Apple's "Receipt Fields"): a SET
/// of (type, version, value) attributes, the in-app purchases nested the same way. Only the
/// fields the ledger uses are kept; the ids lead to Apple's history (Apple's migration path from
/// receipts to the App Store Server API).
package struct AppReceipt: Sendable, Equatable {
    package var bundleID: String
    package var appVersion: String?
    package var originalAppVersion: String?
    /// When the App Store made the receipt: the instant its chain must have been valid.
    package var creationDate: Date
    package var expirationDate: Date?
    package var inAppPurchases: [InAppPurchase]

    package struct InAppPurchase: Sendable, Equatable {
        package var productID: String
        package var transactionID: String
        package var originalTransactionID: String
        package var purchaseDate: Date?
        package var originalPurchaseDate: Date?
        package var expiresDate: Date?
        package var cancellationDate: Date?
        package var quantity: Int64
        package var webOrderLineItemID: Int64?
    }

    /// The original transaction ids, each once, in receipt order: the families to ask Apple about.
    package var originalTransactionIDs: [String] {
        var seen = Set<String>()
        return inAppPurchases.map(\.originalTransactionID).filter { seen.insert($0).inserted }
    }

    typealias Malformed = BERReading.Malformed

    /// Reads the payload (DER, read as BER). Attribute types are Apple's documented numbers.
    init(payload: [UInt8]) throws {
        let fields = try Self.attributes(payload, "receipt")
        guard let bundle = fields[2] else { throw Malformed("the receipt has no bundle id") }
        bundleID = try Self.string(bundle, "bundle id")
        appVersion = try fields[3].map { try Self.string($0, "app version") }
        originalAppVersion = try fields[19].map { try Self.string($0, "original app version") }
        guard let created = try fields[12].flatMap({ try Self.date($0, "creation date") }) else {
            throw Malformed("the receipt has no creation date")
        }
        creationDate = created
        expirationDate = try fields[21].flatMap { try Self.date($0, "expiration date") }
        inAppPurchases = try Self.inAppValues(payload).map(InAppPurchase.init(payload:))
    }

    /// Type → value bytes of a SET of ReceiptAttribute; the first of a repeated type wins
    /// (in-app entries, type 17, repeat and are read by `inAppValues`).
    static func attributes(_ bytes: [UInt8], _ what: String) throws -> [Int64: [UInt8]] {
        var fields: [Int64: [UInt8]] = [:]
        for (type, value) in try entries(bytes, what) where fields[type] == nil { fields[type] = value }
        return fields
    }

    static func entries(_ bytes: [UInt8], _ what: String) throws -> [(Int64, [UInt8])] {
        let set: ASN1Node
        do { set = try BER.parse(bytes) } catch { throw Malformed("the \(what) payload is not ASN.1") }
        guard set.identifier == .set else { throw Malformed("the \(what) payload is not a SET of attributes") }
        return try BERReading.children(set, what).map { attribute in
            let parts = try BERReading.children(attribute, "\(what) attribute")
            guard parts.count == 3 else { throw Malformed("a \(what) attribute has \(parts.count) parts, not 3") }
            return (try BERReading.integer(parts[0], "attribute type"), try BERReading.octets(parts[2], "attribute value"))
        }
    }

    static func inAppValues(_ payload: [UInt8]) throws -> [[UInt8]] {
        try entries(payload, "receipt").filter { $0.0 == 17 }.map(\.1)
    }

    /// A value is itself DER: a UTF8String, IA5String or INTEGER inside the OCTET STRING.
    static func value(_ bytes: [UInt8], _ what: String) throws -> ASN1Node {
        do { return try BER.parse(bytes) } catch { throw Malformed("the \(what) is not ASN.1") }
    }

    static func string(_ bytes: [UInt8], _ what: String) throws -> String {
        try BERReading.text(try value(bytes, what), what)
    }

    static func integer(_ bytes: [UInt8], _ what: String) throws -> Int64 {
        try BERReading.integer(try value(bytes, what), what)
    }

    /// RFC 3339 in an IA5String; Apple leaves dates that do not apply empty.
    static func date(_ bytes: [UInt8], _ what: String) throws -> Date? {
        let text = try string(bytes, what)
        if text.isEmpty { return nil }
        guard let date = RFC3339.parse(text) else { throw Malformed("the \(what) \(text) is not an RFC 3339 time") }
        return date
    }
}

extension AppReceipt.InAppPurchase {
    init(payload: [UInt8]) throws {
        let fields = try AppReceipt.attributes(payload, "in-app purchase")
        guard let product = fields[1702], let transaction = fields[1703] else {
            throw AppReceipt.Malformed("an in-app purchase lacks its product or transaction id")
        }
        productID = try AppReceipt.string(product, "product id")
        transactionID = try AppReceipt.string(transaction, "transaction id")
        originalTransactionID = try fields[1705].map { try AppReceipt.string($0, "original transaction id") } ?? transactionID
        purchaseDate = try fields[1704].flatMap { try AppReceipt.date($0, "purchase date") }
        originalPurchaseDate = try fields[1706].flatMap { try AppReceipt.date($0, "original purchase date") }
        expiresDate = try fields[1708].flatMap { try AppReceipt.date($0, "expiration date") }
        cancellationDate = try fields[1712].flatMap { try AppReceipt.date($0, "cancellation date") }
        quantity = try fields[1701].map { try AppReceipt.integer($0, "quantity") } ?? 1
        webOrderLineItemID = try fields[1711].map { try AppReceipt.integer($0, "web order line item id") }
    }
}
