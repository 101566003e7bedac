import Foundation
import LedgerDomainTestSupport
import LedgerFormats
import PropertyBased
import Testing

@testable import LedgerCore

/// `StorageDecoder` and `TimelineJSON` against Foundation's coders, which they replace on the
/// hot paths: the same values out of the same stored text, on random histories and edge cases.
@Suite struct StorageCodingTests {
    @Test func everyStoredEventAndTimelineDecodesAsJSONDecoderDecodesIt() async {
        await propertyCheck(count: 40, input: Gen.uint64(in: 0 ... .max)) { seed in
            let history = RandomHistory(seed: seed, steps: 60)
            for fact in history.facts {
                let data = try! fact.event.encodedData()
                let reference = try! LedgerEvent(typeName: fact.event.typeName, data: data, decoder: LedgerEvent.decoder)
                let fast = try! LedgerEvent(typeName: fact.event.typeName, data: data)
                #expect(fast == reference && fast == fact.event, "seed \(seed), \(fact.event.typeName)")
            }
            let ledger = AppLedger(bundleID: "com.example.app", facts: history.facts)
            for user in RandomHistory.users {
                let timeline = ledger.timeline(of: user)
                let written = Data(TimelineJSON.bytes(timeline))
                #expect(
                    try! LedgerEvent.decoder.decode(UserTimeline.self, from: written) == timeline,
                    "JSONDecoder reads what TimelineJSON wrote; seed \(seed)")
                #expect(
                    try! StorageDecoder.decode(UserTimeline.self, from: try! LedgerEvent.encoder.encode(timeline)) == timeline,
                    "seed \(seed)")
            }
        }
    }

    @Test func fractionalMillisecondsAndOddStringsDecodeAsFoundationDecodesThem() throws {
        // Milliseconds as a double do not round-trip every Date bit for bit, with Foundation's
        // coders either; what must hold is that both paths land on the very same value.
        let facts = TransactionFacts(
            environment: .sandbox, transactionID: "quote \" back\\slash\ttab\nline \u{1}ctl é 😀 \u{2028}",
            originalTransactionID: "o", productID: "p", purchaseDate: Date(timeIntervalSince1970: 1_700_000_000.1234567),
            expiresDate: Date(timeIntervalSince1970: -12.5), price: -4990, appAccountToken: UUID(), signedDate: Date())
        let viaFoundation = try LedgerEvent.encoder.encode(facts)
        let reference = try LedgerEvent.decoder.decode(TransactionFacts.self, from: viaFoundation)
        #expect(reference.transactionID == facts.transactionID && reference.appAccountToken == facts.appAccountToken)
        #expect(abs(reference.signedDate.timeIntervalSince(facts.signedDate)) < 0.000_001)
        #expect(try StorageDecoder.decode(TransactionFacts.self, from: viaFoundation) == reference)
    }

    @Test func theHandWrittenTimelineWritesEveryStoredPropertyOfEveryType() throws {
        // Every optional set, so a property added to one of these types and forgotten by
        // TimelineJSON fails here: each type's stored properties are its written keys.
        let at = Date(timeIntervalSince1970: 1_700_000_000.5)
        let period = AccessPeriod(
            entitlements: ["pro", "a\"b"], productID: "p", originalTransactionID: "o", transactionID: "t", start: at,
            end: at + 1, source: .familyShared, willRenew: true, billingRetry: true, gracePeriodEnd: at + 2)
        let subscription = SubscriptionTimeline(
            originalTransactionID: "o", productID: "p", accessEnd: at, revokedAt: at, gracePeriodEnd: at,
            billingRetry: true, willRenew: false, pendingProductID: "q", expirationIntent: 2,
            billingPlanType: "MONTHLY", commitmentExpiresAt: at + 3, offerType: 4, offerIdentifier: "win-back", store: .googlePlay)
        let purchase = PurchaseSummary(
            transactionID: "t", originalTransactionID: "o", productID: "p", type: .nonRenewing, purchaseDate: at,
            quantity: 3, revokedAt: at, store: .googlePlay)
        let entry = BalanceEntry(
            kind: .credit, currency: "coins", amount: 100, at: at, reference: "r", expiresAt: at + 5, origin: .renewal, reason: "a month",
            detail: "sword-7")
        let timeline = UserTimeline(
            userID: "u\n1", periods: [period], subscriptions: [subscription], purchases: [purchase], balanceEntries: [entry],
            consentRescindedAt: at + 4,
            appPurchase: AppPurchaseSummary(
                AppTransactionFacts(
                    userID: "u", appTransactionID: "705", environment: .sandbox,
                    originalApplicationVersion: "1.4", originalPurchaseDate: at,
                    originalPlatform: "iOS")))
        let written = Data(TimelineJSON.bytes(timeline))
        #expect(try LedgerEvent.decoder.decode(UserTimeline.self, from: written) == timeline)
        guard case .object(let top) = try JSONTree.parse(written) else { Issue.record("not an object"); return }
        func keys(_ name: String) -> Set<String> {
            guard case .array(let items)? = top.first(where: { $0.0 == name })?.1, case .object(let members)? = items.first else {
                return []
            }
            return Set(members.map(\.0))
        }
        func properties(_ value: Any) -> Set<String> { Set(Mirror(reflecting: value).children.compactMap(\.label)) }
        #expect(Set(top.map(\.0)) == properties(timeline))
        #expect(keys("periods") == properties(period))
        #expect(keys("subscriptions") == properties(subscription))
        #expect(keys("purchases") == properties(purchase))
        #expect(keys("balanceEntries") == properties(entry))
    }

    @Test func theHandDecodedTransactionReadsEveryStoredProperty() throws {
        // Every optional set and every value off its default: a property added to
        // TransactionFacts and forgotten by init(stored:) comes out different here.
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        let full = TransactionFacts(
            environment: .sandbox, transactionID: "t", originalTransactionID: "o", productID: "p", purchaseDate: at,
            originalPurchaseDate: at - 1, expiresDate: at + 1, quantity: 3, ownership: .familyShared, isUpgraded: true,
            price: 4990, currency: "EUR", storefront: "FRA", webOrderLineItemID: "w", appAccountToken: UUID(),
            offerType: 2, offerIdentifier: "intro", offerDiscountType: "PAY_AS_YOU_GO", offerPeriod: "P1M",
            appTransactionID: "704", billingPlanType: "MONTHLY",
            commitment: Commitment(billingPeriodNumber: 3, totalBillingPeriods: 12, expiresDate: at + 4, price: 119_880),
            revocationDate: at + 2, revocationReason: 1, signedDate: at + 3, store: .googlePlay)
        let unset = Mirror(reflecting: full).children.filter { child in
            let value = Mirror(reflecting: child.value)
            return value.displayStyle == .optional && value.children.isEmpty
        }
        #expect(unset.isEmpty, "every optional is set: \(unset.compactMap(\.label))")
        let data = try LedgerEvent.encoder.encode(full)
        #expect(try LedgerEvent(typeName: "Renewed", data: data) == .renewed(full))
        #expect(
            try LedgerEvent(typeName: "Renewed", data: data) == LedgerEvent(typeName: "Renewed", data: data, decoder: LedgerEvent.decoder))
        #expect(throws: DecodingError.self) { try LedgerEvent(typeName: "Purchased", data: Data(#"{"transactionID": "t"}"#.utf8)) }
    }

    @Test func jsonbPrintedTextAndEscapesParse() throws {
        // How PostgreSQL prints jsonb: spaces after ':' and ','; \u escapes and surrogate pairs.
        let tree = try JSONTree.parse(#"{"a": [1, 2.5e3, -0.25, true, false, null], "b": "x\u00e9\ud83d\ude00\/\"", "c": {}}"#)
        #expect(
            tree
                == .object([
                    ("a", .array([.number("1"), .number("2.5e3"), .number("-0.25"), .bool(true), .bool(false), .null])),
                    ("b", .string("xé😀/\"")), ("c", .object([])),
                ]))
        struct Numbers: Decodable, Equatable { var i: Int; var f: Int64; var d: Double; var grants: [String: Int64]; var missing: String? }
        let numbers = try StorageDecoder.decode(
            Numbers.self, from: #"{"i": 1e3, "f": 2000.0, "d": 0.5, "grants": {"coins": 100, "gems": 5}, "missing": null}"#)
        #expect(numbers == Numbers(i: 1000, f: 2000, d: 0.5, grants: ["coins": 100, "gems": 5], missing: nil))
    }

    @Test func malformedTextAndWrongShapesAreErrorsNotCrashes() {
        for text in [
            "", "{", #"{"a" 1}"#, #"{"a": 1,}"#, "[1 2]", #""open"#, #""\x""#, #""\ud800""#, "tru", "{} x",
            "[" + String(repeating: "[", count: 600),
        ] {
            #expect(throws: JSONTree.SyntaxError.self, "\(text)") { try JSONTree.parse(text) }
        }
        struct Needs: Decodable { var name: String; var count: Int }
        #expect(throws: DecodingError.self) { try StorageDecoder.decode(Needs.self, from: #"{"name": "x"}"#) }
        #expect(throws: DecodingError.self) { try StorageDecoder.decode(Needs.self, from: #"{"name": 1, "count": 1}"#) }
        #expect(throws: DecodingError.self) { try StorageDecoder.decode(Needs.self, from: #"{"name": "x", "count": 1.5}"#) }
        #expect(throws: DecodingError.self) { try StorageDecoder.decode(Needs.self, from: "[]") }
    }

    /// Event ids derive from event data: the hand-written stored JSON must be JSONEncoder's to the
    /// byte, on every value it writes, and must decline the values whose spelling it does not copy.
    @Test func purchasesAndClaimsAreWrittenByteForByteAsJSONEncoderWritesThem() async throws {
        func check(_ event: LedgerEvent, _ reference: Data, _ context: String) {
            #expect(try! event.encodedData() == reference, "\(context): \(String(decoding: reference, as: UTF8.self))")
        }
        await propertyCheck(count: 40, input: Gen.uint64(in: 0 ... .max)) { seed in
            for fact in RandomHistory(seed: seed, steps: 60).facts {
                switch fact.event {
                case .purchased(let value), .restored(let value), .renewed(let value), .recovered(let value):
                    check(fact.event, try! LedgerEvent.encoder.encode(value), "seed \(seed)")
                case .transactionClaimed(let claim):
                    check(fact.event, try! LedgerEvent.encoder.encode(claim), "seed \(seed)")
                default: continue
                }
            }
        }
        // Every optional set and every odd value, each on its own: the fast path or the fallback,
        // the bytes are JSONEncoder's.
        let at = Date(timeIntervalSince1970: 1_718_123_456.789)
        let full = TransactionFacts(
            environment: .production, transactionID: "2000000123456789", originalTransactionID: "2000000000000001",
            productID: "com.example.pro.monthly", purchaseDate: at, originalPurchaseDate: at - 86_400, expiresDate: at + 2_592_000,
            quantity: 3, ownership: .familyShared, isUpgraded: true, price: 9_990, currency: "EUR", storefront: "FRA",
            webOrderLineItemID: "2000000000000002", appAccountToken: UUID(), offerType: 2, offerIdentifier: "launch-50",
            offerDiscountType: "PAY_UP_FRONT", offerPeriod: "P3M", appTransactionID: "704116235", billingPlanType: "MONTHLY",
            revocationDate: at + 60, revocationReason: 1, signedDate: at + 1, store: .googlePlay)
        var odd: [TransactionFacts] = [
            full,
            TransactionFacts(
                environment: .sandbox, transactionID: "t", originalTransactionID: "o", productID: "p",
                purchaseDate: at, signedDate: at),
        ]
        for text in ["a/b", "quote \"", "back\\slash", "tab\t", "é", "😀", "\u{7F}", "\u{2028}", "", " "] {
            var facts = full
            facts.productID = text
            odd.append(facts)
        }
        var committed = full
        committed.commitment = Commitment(billingPeriodNumber: 2, totalBillingPeriods: 12, expiresDate: at + 31_536_000, price: 119_880)
        odd.append(committed)
        for date in [
            Date(timeIntervalSince1970: 1_700_000_000.1234567), Date(timeIntervalSince1970: -12.5), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: 1e13), Date(timeIntervalSinceReferenceDate: 0.000_1),
        ] {
            var facts = full
            facts.purchaseDate = date
            odd.append(facts)
        }
        for (index, facts) in odd.enumerated() {
            check(.purchased(facts), try LedgerEvent.encoder.encode(facts), "odd value \(index)")
        }
        for user in ["alice", "a/b", "user@example.com", "ü", "x\"y"] {
            let claim = Claim(originalTransactionID: "1", userID: user)
            check(.transactionClaimed(claim), try LedgerEvent.encoder.encode(claim), "user \(user)")
        }
        #expect(
            StoredEventJSON.bytes(full) != nil && StoredEventJSON.bytes(odd[1]) != nil, "the fast path is taken for Apple's usual values")
    }

    /// An Apple fact recorded today is written as before a second store existed: no `store` key,
    /// so its id and its chain are the same; a Google fact names its store, and both read back.
    @Test func onlyAFactOfAnotherStoreThanApplesNamesItsStore() throws {
        let at = Date(timeIntervalSince1970: 1_718_000_000)
        let apple = TransactionFacts(
            environment: .production, transactionID: "1", originalTransactionID: "1", productID: "p", purchaseDate: at, signedDate: at)
        var google = apple
        google.store = .googlePlay
        let appleText = String(decoding: try LedgerEvent.purchased(apple).encodedData(), as: UTF8.self)
        let googleText = String(decoding: try LedgerEvent.purchased(google).encodedData(), as: UTF8.self)
        #expect(!appleText.contains(#""store""#))
        #expect(googleText.contains(#""store":"google_play""#))
        #expect(try LedgerEvent(typeName: "Purchased", data: Data(googleText.utf8)) == .purchased(google))
        let renewal = RenewalFacts(
            environment: .production, originalTransactionID: "1", productID: "p", willAutoRenew: true, signedDate: at)
        #expect(!String(decoding: try LedgerEvent.encoder.encode(renewal), as: UTF8.self).contains("store"))
        let revocation = RevocationFacts(
            environment: .production, transactionID: "1", originalTransactionID: "1", revocationDate: at, signedDate: at)
        #expect(!String(decoding: try LedgerEvent.encoder.encode(revocation), as: UTF8.self).contains("store"))
    }
}
