import Crypto
import Foundation

/// Ids derived from what a thing says, so that the same thing arriving twice appends nothing new:
/// events (Apple's retries, an app posting again, a client retrying after a timeout) and changes
/// (derived again by a re-derivation or a clock sweep).
package enum StableID {
    package static func make(_ parts: String...) -> UUID {
        var bytes = Array(SHA256.hash(data: Data(parts.joined(separator: "\u{1F}").utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50 // version 5 (name-based, SHA)
        bytes[8] = (bytes[8] & 0x3F) | 0x80 // RFC 4122 variant
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
