import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerTestSupport
import Testing

/// Both axes of time over HTTP, on the real server: `at` (valid time), `known_at` (what the ledger
/// knew), the audit trail and the month-end export as they were at a close.
@Suite(.takingTurns) struct TimeTravelHTTPTests {
    static let bundle = TestServer.bundleID

    static func entitlement(_ answer: TestServer.Answer, _ name: String) -> [String: any Sendable]? {
        (answer.json["entitlements"] as? [String: any Sendable])?[name] as? [String: any Sendable]
    }

    @Test func anOldPurchasePostedTodayIsOwnedFromItsPurchaseAndTheAnswerOfBeforeIsKept() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read])
        let bought = SimulatedTransaction(
            transactionID: "tt-1", productID: "remove.ads", type: "Non-Consumable",
            purchaseDate: Date(timeIntervalSinceNow: -40 * 86_400))
        let before = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/dave", key: key)
        let knownBefore = try #require(before.json["known_at"] as? String)
        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "dave", "signed_transaction": try server.app.signedTransaction(bought)])

        let twentyDaysAgo = RFC3339Text.string(Date(timeIntervalSinceNow: -20 * 86_400))
        let then = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/dave?at=\(twentyDaysAgo)", key: key)
        #expect(Self.entitlement(then, "no_ads")?["active"] as? Bool == true, "owned since its purchase: \(then.text)")
        #expect((then.json["as_of"] as? String)?.hasPrefix(String(twentyDaysAgo.dropLast())) == true, "\(then.text)")
        let asKnown = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/users/dave?at=\(twentyDaysAgo)&known_at=\(knownBefore)", key: key)
        #expect(Self.entitlement(asKnown, "no_ads") == nil, "before the posting the ledger knew nothing of it: \(asKnown.text)")
        #expect(asKnown.json["known_at"] as? String == knownBefore)
        // The live answer of before, asked again by its own known_at: the same bytes.
        let again = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/dave?known_at=\(knownBefore)", key: key)
        #expect(again.text == before.text, "\(again.text)\n\(before.text)")
    }

    @Test func aRefundAfterTheCloseIsAbsentFromTheClosedBooksTheStateAndTheTrailAsKnownThen() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.ingest, .read, .finance])
        let bought = SimulatedTransaction(
            transactionID: "tt-2", productID: "remove.ads", type: "Non-Consumable",
            purchaseDate: Date(timeIntervalSinceNow: -10 * 86_400))
        _ = try await server.send(
            "POST", "/v1/apps/\(Self.bundle)/transactions", key: key,
            json: ["user_id": "erin", "signed_transaction": try server.app.signedTransaction(bought)])
        let close = try #require(try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin", key: key).json["known_at"] as? String)
        // Apple refunds it (dated two days ago), and tells the ledger after the close.
        let refund = try server.app.notificationV2(
            "REFUND", transaction: bought.revoked(at: Date(timeIntervalSinceNow: -2 * 86_400)), signedDate: Date())
        #expect(try await NotificationSender().send(refund, to: "\(server.baseURL)/v1/apps/\(Self.bundle)/notifications/apple") == 200)

        let now = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin", key: key)
        #expect(Self.entitlement(now, "no_ads")?["active"] as? Bool == false, "\(now.text)")
        let threeDaysAgo = RFC3339Text.string(Date(timeIntervalSinceNow: -3 * 86_400))
        #expect(
            Self.entitlement(try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin?at=\(threeDaysAgo)", key: key), "no_ads")?[
                "active"] as? Bool
                == true,
            "before the refund's date it was owned")
        let closed = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin?known_at=\(close)", key: key)
        #expect(Self.entitlement(closed, "no_ads")?["active"] as? Bool == true, "at the close the refund was unknown: \(closed.text)")

        let trail = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin/events", key: key)
        let trailClosed = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/erin/events?known_at=\(close)", key: key)
        let types = { (answer: TestServer.Answer) in
            ((answer.json["events"] as? [[String: any Sendable]]) ?? []).compactMap { $0["type"] as? String }
        }
        #expect(types(trail).contains("Refunded") && !types(trailClosed).contains("Refunded"), "\(types(trail)) / \(types(trailClosed))")
        #expect(
            Array(types(trail).prefix(types(trailClosed).count)) == types(trailClosed), "the trail at the close is the trail's beginning")

        let export = try await server.send("GET", "/v1/apps/\(Self.bundle)/exports/transactions?environment=Sandbox", key: key)
        let exportClosed = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/exports/transactions?environment=Sandbox&known_at=\(close)", key: key)
        let rows = export.text.split(separator: "\r\n").map(String.init),
            rowsClosed = exportClosed.text.split(separator: "\r\n").map(String.init)
        #expect(
            rows.first?.hasSuffix(",storefront,recorded_at,offer_type,offer_id,offer_discount_type,store,position") == true,
            "\(rows.first ?? "")")
        #expect(rows.count == 3 && rows[1].contains(",purchase,") && rows[2].contains(",refund,"), "\(export.text)")
        #expect(rowsClosed.count == 2 && rowsClosed[1] == rows[1], "the closed books: the purchase alone, as it was\n\(exportClosed.text)")
        let header = rows[0].split(separator: ",", omittingEmptySubsequences: false)
        let recordedColumn = try #require(header.firstIndex(of: "recorded_at"))
        let refundRecorded = String(rows[2].split(separator: ",", omittingEmptySubsequences: false)[recordedColumn])
        #expect(refundRecorded > close, "the refund row says it arrived after the close: \(refundRecorded) vs \(close)")
    }

    @Test func badTimesAreRefusedClearly() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let key = try await server.key([.read])
        for query in ["known_at=yesterday", "at=2026-13-01", "known_at=\(RFC3339Text.string(Date(timeIntervalSinceNow: 3_600)))"] {
            let answer = try await server.send("GET", "/v1/apps/\(Self.bundle)/users/dave?\(query)", key: key)
            #expect(answer.status == 400 && answer.errorCode == "invalid_time", "\(query): \(answer.text)")
        }
        let finance = try await server.key([.finance])
        let future = try await server.send(
            "GET", "/v1/apps/\(Self.bundle)/exports/transactions?known_at=\(RFC3339Text.string(Date(timeIntervalSinceNow: 3_600)))",
            key: finance)
        #expect(future.status == 400 && future.errorCode == "invalid_time", "\(future.text)")
    }
}
