import LedgerCore
import LedgerIngestion
import Testing

/// Every identifier that enters passes one gate: no control character of any kind, bounded length.
@Suite struct IdentifierTests {
    @Test(arguments: [
        "alice\u{1E}com.example.other\u{1F}bob", "a\u{1F}b", "a\u{1D}b", "tab\there", "nul\u{0}", "del\u{7F}", "line\nbreak", "",
    ])
    func controlCharactersAndEmptyValuesAreRefused(value: String) {
        for rule in [Identifier.userID, .grantID, .idempotencyKey, .currency, .entitlement] {
            #expect(throws: LedgerError.self, "\(rule.field) \(value.debugDescription)") { try rule.check(value) }
        }
    }

    @Test func ordinaryIdentifiersPassAndLengthIsBounded() throws {
        #expect(try Identifier.userID.check("player-42 🎮 Zoë") == "player-42 🎮 Zoë")
        #expect(throws: LedgerError(.invalidUserID, "user_id must be 1–255 characters without control characters")) {
            try Identifier.userID.check(String(repeating: "x", count: 256))
        }
        // Characters, not bytes: the API description's maxLength counts code points.
        #expect(try Identifier.userID.check(String(repeating: "🎮", count: 255)).unicodeScalars.count == 255)
    }
}
