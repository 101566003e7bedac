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

    @Test func hexRoundTripsAndRejectsGarbage() {
        let bytes: [UInt8] = [0, 1, 0xAB, 0xFF]
        #expect(Hex.encode(bytes) == "0001abff")
        #expect(Hex.decode("\\x0001ABff") == bytes)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }
}
