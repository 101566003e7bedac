import Foundation

/// Base64url as JWTs use it (RFC 7515: `-` and `_`, no padding), written here rather than taken
/// from the App Store module: this module sits beside it, not above it.
package enum Base64URLText {
    package static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func encode(_ text: String) -> String { encode(Data(text.utf8)) }

    /// Base64url or plain base64, padded or not; nil for anything else.
    package static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if base64.count % 4 == 1 { return nil }
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
