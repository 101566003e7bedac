import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerTestSupport
import Testing

/// `GET …/users/{u}/export`: everything the ledger holds about one user, gathered from each place
/// their id is written, and nothing of anybody else.
@Suite(.takingTurns) struct SubjectAccessTests {
    static let bundle = TestServer.bundleID

    @Test func theExportHoldsEverythingKeptAboutTheUserAndNothingOfOthers() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let b = Self.bundle
        let key = try await server.key([.ingest, .read])
        let token = UUID()
        let linked = try await server.send("PUT", "/v1/apps/\(b)/users/kim/app-account-tokens/\(token)", key: key)
        #expect(linked.status == 200, "\(linked.text)")
        var subscription = SimulatedTransaction(
            transactionID: "x-1", productID: "pro.monthly", purchaseDate: Date(timeIntervalSinceNow: -60),
            expiresDate: Date(timeIntervalSinceNow: 86_400))
        subscription.appAccountToken = token
        let jws = try server.app.signedTransaction(subscription)
        let bought = try await server.send(
            "POST", "/v1/apps/\(b)/transactions", key: key, json: ["user_id": "kim", "signed_transaction": jws])
        #expect(bought.status == 200, "\(bought.text)")
        let other = try server.app.signedTransaction(
            SimulatedTransaction(
                transactionID: "x-2", productID: "remove.ads", type: "Non-Consumable", purchaseDate: Date(timeIntervalSinceNow: -60)))
        _ = try await server.send("POST", "/v1/apps/\(b)/transactions", key: key, json: ["user_id": "lou", "signed_transaction": other])
        let granted = try await server.send(
            "POST", "/v1/apps/\(b)/users/kim/grants", key: server.adminKey,
            json: ["entitlement": "vip", "duration": "P7D", "reason": "goodwill"])
        #expect(granted.status == 201, "\(granted.text)")
        // The change projection runs behind the users projection: wait until it announced kim.
        let (announced, after) = try await server.waitForChange(key: key, within: .seconds(50)) { $0["user_id"] as? String == "kim" }
        #expect(announced)

        let refused = try await server.send("GET", "/v1/apps/\(b)/users/kim/export", key: key)
        #expect(refused.status == 403, "an export of everything held is an admin's: \(refused.text)")

        let export = try await server.send("GET", "/v1/apps/\(b)/users/kim/export", key: server.adminKey)
        #expect(export.status == 200, "\(export.text)")
        let json = export.json
        #expect(json["user_id"] as? String == "kim")
        #expect((json["state"] as? [String: any Sendable])?["user_id"] as? String == "kim")
        let types = (json["events"] as? [[String: any Sendable]] ?? []).compactMap { $0["type"] as? String }
        #expect(Set(types).isSuperset(of: ["Purchased", "TransactionClaimed", "PromotionalGranted"]), "\(types)")
        let evidence = json["evidence"] as? [[String: any Sendable]] ?? []
        #expect(evidence.map { $0["body"] as? String } == [jws], "the JWS kim's purchase was recorded from, as it came")
        let tokens = (json["app_account_tokens"] as? [[String: any Sendable]] ?? []).compactMap { $0["app_account_token"] as? String }
        #expect(tokens == [token.uuidString.lowercased()])
        let changes = json["changes"] as? [[String: any Sendable]] ?? []
        #expect(!changes.isEmpty && changes.allSatisfy { $0["user_id"] as? String == "kim" })
        let actions = (json["admin_actions"] as? [[String: any Sendable]] ?? []).compactMap { $0["action"] as? String }
        #expect(actions == ["grant.created"])
        #expect(!export.text.contains("lou") && !export.text.contains("x-2"), "nothing of another user")

        // lou takes kim's purchase (restore policy transfer): each export names only its own user.
        let taken = try await server.send(
            "POST", "/v1/apps/\(b)/transactions", key: key, json: ["user_id": "lou", "signed_transaction": jws])
        #expect(taken.status == 200, "\(taken.text)")
        let afterTransfer = try await server.send("GET", "/v1/apps/\(b)/users/kim/export", key: server.adminKey)
        let transfer = (afterTransfer.json["events"] as? [[String: any Sendable]] ?? []).first {
            $0["type"] as? String == "OwnershipTransferred"
        }
        #expect((transfer?["data"] as? [String: any Sendable])?["toUserID"] as? String == "(another user)", "\(afterTransfer.text)")
        // The change that announced the transfer is in kim's export too, once announced.
        let announcedTransfer = try await server.waitForChange(key: key, after: after, within: .seconds(50)) {
            $0["type"] as? String == "ownership.transferred"
        }.found
        #expect(announcedTransfer)
        let withChange = try await server.send("GET", "/v1/apps/\(b)/users/kim/export", key: server.adminKey)
        let transferChange = (withChange.json["changes"] as? [[String: any Sendable]] ?? []).first {
            $0["type"] as? String == "ownership.transferred"
        }
        #expect((transferChange?["change"] as? [String: any Sendable])?["to"] as? String == "(another user)", "\(withChange.text)")
        #expect(!withChange.text.contains("lou"))

        let nobody = try await server.send("GET", "/v1/apps/\(b)/users/nobody/export", key: server.adminKey)
        #expect(nobody.status == 200)
        #expect((nobody.json["events"] as? [Any])?.isEmpty == true && (nobody.json["evidence"] as? [Any])?.isEmpty == true)
    }
}
