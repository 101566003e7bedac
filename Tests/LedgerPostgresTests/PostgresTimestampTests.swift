import Foundation
import LedgerPostgres
import Testing

@Suite struct PostgresTimestampTests {
    @Test func formatsAndParsesMicrosecondsExactly() throws {
        for micros: Int64 in [0, 1, 1_681_314_324_000_000, 1_681_314_324_123_456, -1, -86_400_000_001, 4_102_444_799_999_999] {
            let text = PostgresTimestamp.format(microsecondsSinceEpoch: micros)
            #expect(PostgresTimestamp.parseMicroseconds(text) == micros, "round trip of \(text)")
        }
    }

    @Test func parsesPostgresOutputWithOffsets() {
        #expect(PostgresTimestamp.parseMicroseconds("2023-04-12 15:45:24+00") == 1_681_314_324_000_000)
        #expect(PostgresTimestamp.parseMicroseconds("2023-04-12 17:45:24.5+02") == 1_681_314_324_500_000)
        #expect(PostgresTimestamp.parseMicroseconds("2023-04-12 15:15:24-00:30") == 1_681_314_324_000_000)
        #expect(PostgresTimestamp.parseMicroseconds("yesterday") == nil)
    }

    /// Ids read back from PostgreSQL are parsed by hand (`PostgresCell.canonicalUUID`): the same
    /// UUID as Foundation's parser for every canonical text, in either case; nil for anything else.
    @Test func uuidsParseAsFoundationParsesThem() {
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(PostgresCell.canonicalUUID(uuid.uuidString.lowercased()) == uuid)
            #expect(PostgresCell.canonicalUUID(uuid.uuidString) == uuid)
        }
        let good = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        #expect(PostgresCell.canonicalUUID(good) == UUID(uuidString: good))
        for bad in [
            "", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111", "a0eebc99x9c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc999c0b-4ef8-bb6d-6bb9bd380a11-", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a}",
        ] {
            #expect(PostgresCell.canonicalUUID(bad) == nil, "\(bad)")
        }
    }

    @Test func hexRoundTripsAndRejectsGarbage() {
        let bytes: [UInt8] = [0, 1, 0xAB, 0xFF]
        #expect(Hex.encode(bytes) == "0001abff")
        #expect(Hex.decode("\\x0001ABff") == bytes)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }
}
