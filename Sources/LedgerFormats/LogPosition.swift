/// A place in the global order: the writing transaction, then the insert position.
///
/// `position` alone is *not* a safe cursor — it is assigned at insert, not at commit — so every
/// checkpoint stores both numbers and readers compare them as a pair.
package struct LogPosition: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    package var transactionID: UInt64
    package var position: Int64

    package init(transactionID: UInt64, position: Int64) {
        self.transactionID = transactionID
        self.position = position
    }

    /// Before the first event.
    package static let start = LogPosition(transactionID: 0, position: 0)

    package static func < (a: LogPosition, b: LogPosition) -> Bool {
        (a.transactionID, a.position) < (b.transactionID, b.position)
    }

    /// `txid.position`, the form used in cursors and checkpoints.
    package var description: String { "\(transactionID).\(position)" }

    package init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let tx = UInt64(parts[0]), let position = Int64(parts[1]), position >= 0 else { return nil }
        self.init(transactionID: tx, position: position)
    }
}
