import Foundation
import LedgerCore
import Testing

@testable import LedgerFacts

@Suite struct StoredFactsTests {
    @Test func evidenceIsReadFromJsonbTextWithAndWithoutTheFastPath() {
        #expect(StoredFacts.evidence(in: #"{"evidence": "sha256:abc"}"#) == "sha256:abc")
        // Other keys, escapes, or another layout fall back to a real parser and still agree.
        #expect(StoredFacts.evidence(in: #"{"source": "v2", "evidence": "sha256:def"}"#) == "sha256:def")
        #expect(StoredFacts.evidence(in: #"{"evidence": "sha256:a\"b"}"#) == "sha256:a\"b")
        #expect(StoredFacts.evidence(in: "{}") == nil)
        #expect(StoredFacts.evidence(in: #"{"evidence": 42}"#) == nil)
    }

    @Test func streamsNameTheirApp() {
        #expect(LedgerStream.bundleID(of: "purchase:com.example.app:2000000123") == "com.example.app")
        #expect(LedgerStream.bundleID(of: "user:com.example.app:user:with:colons") == "com.example.app")
        #expect(LedgerStream.bundleID(of: "test-stream") == nil)
        #expect(LedgerStream.bundleID(of: "hash-check") == nil)
    }
}
