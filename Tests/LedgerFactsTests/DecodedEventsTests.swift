import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerFacts
import Testing

/// Decoding remembered by type and data answers exactly what decoding answers, whatever was
/// remembered before or dropped since.
@Suite struct DecodedEventsTests {
    @Test func rememberedDecodingsAreTheDecodingsThemselves() throws {
        let history = RandomHistory(seed: 42, steps: 40)
        let stored = try history.facts.map { fact in
            (type: fact.event.typeName, data: String(decoding: try fact.event.encodedData(), as: UTF8.self))
        }
        #expect(stored.count > 8)
        // Generations of three: most of the second pass has been dropped and is decoded again.
        let decoded = DecodedEvents(generation: 3)
        for _ in 0..<2 {
            for (type, data) in stored {
                let remembered = try decoded.event(type: type, data: data)
                let direct = try LedgerEvent(typeName: type, data: Data(data.utf8))
                #expect(try remembered.encodedData() == direct.encodedData(), "\(type)")
                #expect(remembered.typeName == type)
            }
        }
        // A type that does not match its data is decoded (and refused) as it would be, not answered
        // from the data's other type.
        let (type, data) = stored[0]
        _ = try decoded.event(type: type, data: data)
        #expect(throws: (any Error).self) { try decoded.event(type: "NoSuchType", data: data) }
    }
}
