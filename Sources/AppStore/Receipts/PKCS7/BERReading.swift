import SwiftASN1

/// Small readers over swift-asn1's BER tree for the PKCS#7 container and the receipt payload.
/// Apple's receipts are BER with indefinite lengths (swift-asn1's `BER.parse` reads those); a
/// constructed OCTET STRING, which BER also allows, is read as the concatenation of its chunks.
enum BERReading {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func children(_ node: ASN1Node, _ what: String) throws -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else { throw Malformed("\(what) is not constructed") }
        return Array(nodes)
    }

    /// The only child of an EXPLICIT tag.
    static func explicit(_ node: ASN1Node, _ what: String) throws -> ASN1Node {
        let inner = try children(node, what)
        guard inner.count == 1 else { throw Malformed("\(what) holds \(inner.count) values, not one") }
        return inner[0]
    }

    static func objectIdentifier(_ node: ASN1Node, _ what: String) throws -> ASN1ObjectIdentifier {
        do { return try ASN1ObjectIdentifier(berEncoded: node) } catch { throw Malformed("\(what) is not an object identifier") }
    }

    /// An OCTET STRING's bytes, primitive or chunked (tagged `identifier`, OCTET STRING by default).
    static func octets(_ node: ASN1Node, _ what: String, identifier: ASN1Identifier = .octetString) throws -> [UInt8] {
        guard node.identifier == identifier else { throw Malformed("\(what) is not an octet string") }
        switch node.content {
        case .primitive(let bytes): return Array(bytes)
        case .constructed(let chunks): return try chunks.flatMap { try octets($0, what) }
        }
    }

    /// A non-negative INTEGER that fits in 63 bits (receipt attribute types, quantities, ids).
    static func integer(_ node: ASN1Node, _ what: String) throws -> Int64 {
        guard node.identifier == .integer, case .primitive(let bytes) = node.content, !bytes.isEmpty else {
            throw Malformed("\(what) is not an integer")
        }
        let digits = bytes.drop { $0 == 0 }
        guard bytes.first! & 0x80 == 0, digits.count <= 8, !(digits.count == 8 && digits.first! & 0x80 != 0) else {
            throw Malformed("\(what) is negative or too large")
        }
        return digits.reduce(0) { $0 << 8 | Int64($1) }
    }

    /// The text of a string value of any ASN.1 string type (UTF8String, IA5String, …).
    static func text(_ node: ASN1Node, _ what: String) throws -> String {
        guard node.identifier.tagClass == .universal, case .primitive(let bytes) = node.content else {
            throw Malformed("\(what) is not a string")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Malformed("\(what) is not UTF-8") }
        return text
    }
}
