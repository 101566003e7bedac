import Foundation

/// Whether a piece of raw evidence carries an appAccountToken, however deep: Apple's evidence is
/// layered — a notification's JWS holds a payload whose `signedTransactionInfo` is a JWS again, a
/// receipt is base64 of a signed container — so the token is looked for in the bytes as they are
/// and in every base64 or base64url run in them, decoded, down a few layers. Written as the
/// canonical text (upper or lower case) or as its 16 bytes.
package enum EvidenceSearch {
    package static func mentions(_ body: [UInt8], anyOf tokens: [UUID]) -> Bool {
        let needles = tokens.flatMap { token -> [[UInt8]] in
            let raw = withUnsafeBytes(of: token.uuid) { Array($0) }
            return [Array(token.uuidString.utf8), Array(token.uuidString.lowercased().utf8), raw]
        }
        return search(body, for: needles, depth: 0)
    }

    /// Runs this short are not worth decoding: a UUID's text is 36 characters, base64 of it 48.
    static let shortestRun = 20
    static let deepest = 4

    static func search(_ bytes: [UInt8], for needles: [[UInt8]], depth: Int) -> Bool {
        if needles.contains(where: { bytes.firstRange(of: $0) != nil }) { return true }
        guard depth < deepest else { return false }
        var start: Int?
        for index in 0...bytes.count {
            let inRun = index < bytes.count && isBase64(bytes[index])
            if inRun {
                if start == nil { start = index }
                continue
            }
            guard let first = start else { continue }
            start = nil
            guard index - first >= shortestRun, let decoded = decode(bytes[first..<index]) else { continue }
            if search(decoded, for: needles, depth: depth + 1) { return true }
        }
        return false
    }

    /// Letters, digits and both alphabets' two extra characters; padding ends a run's content.
    static func isBase64(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "="): true
        default: false
        }
    }

    /// A run decoded as base64 or base64url, padded as needed; nil when it is neither.
    static func decode(_ run: ArraySlice<UInt8>) -> [UInt8]? {
        var text = String(decoding: run, as: UTF8.self).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while let last = text.last, last == "=" { text.removeLast() }
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Data(base64Encoded: text).map(Array.init)
    }
}
