import AppStore
import LedgerCore
import Testing

/// Every documented verifyReceipt status maps to the outcome Apple documents (no fixtures needed).
struct StatusCodeTests {
    @Test func statusesMapToOutcomes() {
        #expect(ReceiptStatus(code: 0) == .valid)
        #expect(ReceiptStatus(code: 21006) == .valid)
        #expect(ReceiptStatus(code: 21007) == .retryInSandbox)
        #expect(ReceiptStatus(code: 21008) == .retryInProduction)
        for code in [21005, 21009, 21100, 21150, 21199] { #expect(ReceiptStatus(code: code) == .temporarilyUnavailable, "\(code)") }
        #expect(ReceiptStatus(code: 21002, isRetryable: true) == .temporarilyUnavailable)
        for code in [21000, 21002, 21003, 21010, 21200, 1] {
            guard case .rejected(let error) = ReceiptStatus(code: code) else { Issue.record("\(code) not rejected"); continue }
            #expect(error.code == .receiptInvalid, "\(code)")
        }
        guard case .rejected(let error) = ReceiptStatus(code: 21004) else { Issue.record("21004 not rejected"); return }
        #expect(error.code == .sharedSecretMismatch)
    }
}
