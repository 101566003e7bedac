import Foundation

/// Base64url as JWS and JWK use it (RFC 7515: `-` and `_`, no padding), one implementation for
/// every store's tokens. Both directions walk the bytes themselves: going through Foundation's
/// base64 and string replacements was over half the cost of an offer signature, and showed up in
/// the verification benchmark.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ text: String) -> String { encode(Data(text.utf8)) }

    package static func encode(_ data: Data) -> String {
        data.withUnsafeBytes { encode(UnsafeRawBufferPointer($0)) }
    }

    private static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [
                alphabet[Int(chunk >> 18 & 63)], alphabet[Int(chunk >> 12 & 63)], alphabet[Int(chunk >> 6 & 63)], alphabet[Int(chunk & 63)],
            ]
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out += [alphabet[Int(chunk >> 18 & 63)], alphabet[Int(chunk >> 12 & 63)]]
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(chunk >> 18 & 63)], alphabet[Int(chunk >> 12 & 63)], alphabet[Int(chunk >> 6 & 63)]]
        default: break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url (JWS) or plain base64 (x5c), padded or not, in one pass over the bytes:
    /// this runs on every verification, where string replacements showed up in the benchmark.
    package static func decode(_ text: some StringProtocol) -> Data? {
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ decode(bytes: $0) }) { return decoded }
        return decode(bytes: Array(text.utf8))
    }

    /// Bytes into an array, one `Data` at the end: appending to `Data` byte by byte cost more than
    /// the decoding itself (profiled).
    private static func decode(bytes text: some Collection<UInt8>) -> Data? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in text {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // Leftover bits must be padding zeros, and a single leftover character is not base64.
        guard bits < 6, buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return Data(out)
    }
}
