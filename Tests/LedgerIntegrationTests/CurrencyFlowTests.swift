import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerCore
import LedgerTestSupport
import Testing

/// A game's economy over HTTP: a currency set up with an expiry, granted by a subscription's
/// paid periods and by the game server, spent with what it bought, a spend taken back, and every
/// movement paged with its lots — each refusal a 4xx naming the field, recording nothing.
@Suite struct CurrencyFlowTests {
    static let bundle = TestServer.bundleID

    @Test func aGameGrantsSpendsReversesAndReadsItsCurrencyWithExpiryInValidTime() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let admin = server.adminKey
        let game = try await server.key([.ingest, .read])
        let app = "/v1/apps/\(Self.bundle)"

        // Set up: tickets last a week; gems granted by each paid month of VIP.
        let tickets = try await server.send(
            "PUT", app + "/currencies/tickets", key: admin, json: ["name": "Tickets", "expires_after": "P7D"])
        #expect(tickets.status == 200 && tickets.json["expires_after"] as? String == "P7D", "\(tickets.text)")
        let vip = try await server.send(
            "PUT", app + "/products/vip.monthly", key: admin,
            json: ["type": "auto_renewable", "entitlements": ["vip"], "grants": ["gems": 500]])
        #expect(vip.status == 200, "\(vip.text)")
        let listed = try await server.send("GET", app + "/currencies", key: game)
        #expect((listed.json["currencies"] as? [[String: any Sendable]])?.compactMap { $0["code"] as? String } == ["tickets"])

        // Refused, naming the field, recording nothing.
        let before = try await server.eventCount()
        for (path, key, body, status, code) in [
            ("/currencies/tickets", admin, ["name": "Tickets", "expires_after": "soon"], 400, "invalid_currency"),
            ("/currencies/tickets", admin, ["name": ""], 400, "invalid_currency"),
            ("/users/alice/currencies/tickets/grants", admin, ["amount": -5, "reason": "oops"], 400, "invalid_amount"),
            ("/users/alice/currencies/stars/grants", admin, ["amount": 5, "reason": "oops"], 404, "unknown_currency"),
            ("/users/alice/currencies/tickets/grants", game, ["amount": 5, "reason": "oops"], 403, "insufficient_scope"),
            ("/users/alice/consumptions", game, ["currency": "stars", "amount": 1, "idempotency_key": "x"], 404, "unknown_currency"),
            (
                "/users/alice/consumptions", game,
                ["currency": "tickets", "amount": 1, "idempotency_key": "x", "reference": String(repeating: "r", count: 256)], 400,
                "invalid_reference"
            ),
            ("/users/alice/consumptions/nothing/reverse", game, ["reason": "undo"], 404, "unknown_spend"),
        ] as [(String, String, [String: Any], Int, String)] {
            let method = path.hasPrefix("/currencies") ? "PUT" : "POST"
            let answer = try await server.send(method, app + path, key: key, json: body)
            #expect(answer.status == status && answer.errorCode == code, "\(path): \(answer.text)")
        }
        let fractional = try await server.send(
            "POST", app + "/users/alice/currencies/tickets/grants", key: admin, body: Data(#"{"amount": 1.5, "reason": "half"}"#.utf8))
        #expect(fractional.status == 400, "\(fractional.text)")
        #expect(try await server.eventCount() == before, "no refusal recorded anything")

        // The game server's grant, idempotent by its id.
        let granted = try await server.send(
            "POST", app + "/users/alice/currencies/tickets/grants", key: admin,
            json: ["amount": 50, "reason": "weekend event", "grant_id": "event-1"])
        #expect(granted.status == 201 && granted.json["balance"] as? Int == 50, "\(granted.text)")
        let again = try await server.send(
            "POST", app + "/users/alice/currencies/tickets/grants", key: admin,
            json: ["amount": 50, "reason": "weekend event", "grant_id": "event-1"])
        #expect(again.status == 200 && again.json["replayed"] as? Bool == true && again.json["balance"] as? Int == 50)

        // Spends with what they bought; one above the balance names it.
        let spent = try await server.send(
            "POST", app + "/users/alice/consumptions", key: game,
            json: ["currency": "tickets", "amount": 20, "idempotency_key": "s1", "reason": "raffle", "reference": "raffle-77"])
        #expect(spent.status == 200 && spent.json["balance"] as? Int == 30, "\(spent.text)")
        let tooMuch = try await server.send(
            "POST", app + "/users/alice/consumptions", key: game, json: ["currency": "tickets", "amount": 31, "idempotency_key": "s2"])
        #expect(tooMuch.status == 409 && tooMuch.errorCode == "insufficient_balance" && tooMuch.text.contains("30"), "\(tooMuch.text)")

        // Taken back: the 20 return to the grant's lot; again, nothing more.
        let reversed = try await server.send(
            "POST", app + "/users/alice/consumptions/s1/reverse", key: game, json: ["reason": "raffle cancelled"])
        #expect(reversed.status == 200 && reversed.json["balance"] as? Int == 50, "\(reversed.text)")
        let twice = try await server.send(
            "POST", app + "/users/alice/consumptions/s1/reverse", key: game, json: ["reason": "raffle cancelled"])
        #expect(twice.status == 200 && twice.json["replayed"] as? Bool == true && twice.json["balance"] as? Int == 50)

        // The history, a page at a time, with the lots.
        let first = try await server.send("GET", app + "/users/alice/currencies/tickets/history?limit=2", key: game)
        let page = first.json["movements"] as? [[String: any Sendable]] ?? []
        #expect(page.compactMap { $0["kind"] as? String } == ["granted", "spent"], "\(first.text)")
        #expect(page.last?["detail"] as? String == "raffle-77" && page.last?["reason"] as? String == "raffle")
        #expect((page.last?["lots"] as? [[String: any Sendable]])?.first?["lot"] as? String == "grant:event-1")
        #expect(first.json["next"] as? String == "2")
        let rest = try await server.send("GET", app + "/users/alice/currencies/tickets/history?after=2", key: game)
        #expect((rest.json["movements"] as? [[String: any Sendable]])?.compactMap { $0["kind"] as? String } == ["restored"])
        #expect(rest.json["balance"] as? Int == 50 && rest.json["next"] == nil)

        // Valid time: either side of the week the grant lasts.
        let week = Date(timeIntervalSinceNow: 7 * 86_400)
        for (instant, expected) in [(week - 60, 50), (week + 60, 0)] {
            let state = try await server.send("GET", app + "/users/alice?at=\(RFC3339.string(instant))", key: game)
            #expect((state.json["balances"] as? [String: any Sendable])?["tickets"] as? Int == expected, "\(state.text)")
        }
        let later = try await server.send(
            "GET", app + "/users/alice/currencies/tickets/history?at=\(RFC3339.string(week + 60))", key: game)
        #expect((later.json["movements"] as? [[String: any Sendable]])?.last?["kind"] as? String == "expired", "\(later.text)")

        // Each paid month of VIP grants its gems.
        let bought = SimulatedTransaction(
            transactionID: "v-1", productID: "vip.monthly", purchaseDate: Date(timeIntervalSinceNow: -40 * 86_400),
            expiresDate: Date(timeIntervalSinceNow: -10 * 86_400))
        for transaction in [bought, bought.renewed(transactionID: "v-2", period: 30 * 86_400)] {
            let posted = try await server.send(
                "POST", app + "/transactions", key: game,
                json: ["user_id": "bob", "signed_transaction": try server.app.signedTransaction(transaction)])
            #expect(posted.status == 200, "\(posted.text)")
        }
        let bob = try await server.send("GET", app + "/users/bob", key: game)
        #expect((bob.json["balances"] as? [String: any Sendable])?["gems"] as? Int == 1_000, "\(bob.text)")

        // Finance's books: a row per currency and day, each closing the next day's opening.
        let finance = try await server.key([.finance])
        let today = String(RFC3339.string(Date()).prefix(10))
        let from = String(RFC3339.string(Date(timeIntervalSinceNow: -45 * 86_400)).prefix(10))
        let tomorrow = String(RFC3339.string(Date(timeIntervalSinceNow: 86_400)).prefix(10))
        let books = try await server.send("GET", app + "/exports/currencies?from=\(from)&to=\(tomorrow)&format=jsonl", key: finance)
        #expect(books.status == 200, "\(books.text)")
        let rows = books.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.count == 2 * 46, "tickets and gems, 46 days each: \(rows.count)")
        for currency in ["gems", "tickets"] {
            let own = rows.filter { $0["currency"] as? String == currency }
            for (day, next) in zip(own, own.dropFirst()) {
                #expect(day["closing"] as? Int == next["opening"] as? Int, "\(currency) \(day)")
            }
        }
        let ticketsToday = rows.first { $0["currency"] as? String == "tickets" && $0["day"] as? String == today }
        #expect(ticketsToday?["issued_free"] as? Int == 50 && ticketsToday?["spent"] as? Int == 0 && ticketsToday?["closing"] as? Int == 50)
        #expect(rows.filter { $0["currency"] as? String == "gems" }.compactMap { $0["issued_paid"] as? Int }.reduce(0, +) == 1_000)
        #expect(rows.last { $0["currency"] as? String == "gems" }?["closing"] as? Int == 1_000)
        let csv = try await server.send("GET", app + "/exports/currencies?from=\(today)&to=\(tomorrow)", key: finance)
        #expect(csv.text.hasPrefix("currency,day,opening,issued_paid,issued_free,spent,expired,reversed,moved,closing\r\n"), "\(csv.text)")
        let open = try await server.send("GET", app + "/exports/currencies?from=\(today)", key: finance)
        #expect(open.status == 400 && open.errorCode == "invalid_time")
        let notFinance = try await server.send("GET", app + "/exports/currencies?from=\(today)&to=\(tomorrow)", key: game)
        #expect(notFinance.status == 403)

        // Support's view: the app's outstanding balances, and a user's lots.
        let support = try await ConsoleTests.signIn(server, key: try await server.key([.read]))
        let appPage = try await server.send("GET", "/console/apps/\(Self.bundle)", headers: [("Cookie", support.cookie)])
        #expect(appPage.text.contains("<td>tickets</td><td>Tickets</td><td>P7D after each grant</td><td>50</td>"), "\(appPage.text)")
        #expect(appPage.text.contains("<td>gems</td><td>(granted by a product, not set up)</td><td>never</td><td>1000</td>"))
        let userPage = try await server.send("GET", "/console/apps/\(Self.bundle)/users/alice", headers: [("Cookie", support.cookie)])
        #expect(userPage.text.contains("50 of 50 from grant:event-1, until"), "\(userPage.text)")
    }
}
