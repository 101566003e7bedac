import Foundation
import LedgerFormats
import Testing

/// The text forms every layer writes and reads: a log position in headers and cursors, UTC
/// timestamps as PostgreSQL and RFC 3339 print them, JSON written canonically.
@Suite struct FormatsTests {
    @Test func aLogPositionReadsBackWhatItWritesAndRefusesAnythingElse() {
        let position = LogPosition(transactionID: 981_234, position: 77)
        #expect(position.description == "981234.77")
        #expect(LogPosition(position.description) == position)
        for text in ["", "1", "1.", ".1", "1.-2", "a.b", "1.2.3", "18446744073709551616.1"] {
            #expect(LogPosition(text) == nil, "\(text)")
        }
    }

    @Test func logPositionsOrderByTransactionThenPosition() {
        // An insert position is assigned before commit: a later transaction may hold a lower one.
        let earlier = LogPosition(transactionID: 10, position: 500), later = LogPosition(transactionID: 11, position: 3)
        #expect(earlier < later)
        #expect(LogPosition.start < earlier)
    }

    @Test func timestampsRoundTripThroughTheirText() throws {
        for seconds: Int64 in [0, 1_700_000_000, -86_400 * 365, 253_402_300_799] {
            let ticks = seconds * 1_000_000 + 123_456
            let text = UTCTimestamp.text(ticks: ticks, fractionDigits: 6)
            let parsed = Array(text.utf8).withUnsafeBufferPointer { UTCTimestamp.microseconds(parsing: $0) }
            #expect(parsed == ticks, "\(text)")
        }
        #expect(UTCTimestamp.text(ticks: 0, fractionDigits: 0).hasPrefix("1970-01-01"))
        let civil = UTCTimestamp.civil(fromDays: UTCTimestamp.daysFromCivil(year: 2024, month: 2, day: 29))
        #expect(civil == (2024, 2, 29))
    }

    @Test func jsonIsWrittenWithSortedKeysWhateverOrderItCameIn() throws {
        let tree = try JSONTree.parse(#"{"b": [1, 2.5, "x\n"], "a": {"d": null, "c": true}}"#)
        var bytes: [UInt8] = []
        tree.sortingKeys().write(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"a":{"c":true,"d":null},"b":[1,2.5,"x\n"]}"#)
        #expect(throws: JSONTree.SyntaxError.self) { try JSONTree.parse(#"{"a": }"#) }
    }
}

/// The byte-level base64url codec against Foundation's base64 on every length's remainder.
@Suite struct Base64URLTests {
    @Test func itEncodesAsFoundationsBase64WithTheURLAlphabetAndNoPaddingAndDecodesBack() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let plain = data.base64EncodedString()
            let expected = plain.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(data) == expected, "length \(length)")
            #expect(Base64URL.decode(expected) == data, "length \(length)")
            #expect(Base64URL.decode(plain) == data, "padded base64, length \(length)")
        }
    }

    @Test func aSingleLeftoverCharacterOrAForeignOneIsNotBase64() {
        #expect(Base64URL.decode("QUJDR") == nil)
        #expect(Base64URL.decode("QU*D") == nil)
    }
}
