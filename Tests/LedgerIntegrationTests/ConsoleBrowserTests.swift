import AppStoreSimulator
import Foundation
import LedgerAccess
import LedgerTestSupport
import Testing

/// The console in a real browser (Debian's chromium, headless): sign in, find a user, read why a
/// refunded subscription ended, look at an earlier date, make and revoke a grant, see the metrics'
/// charts. Screenshots of each step are kept in `.test-artefacts/console/`.
@Suite(.takingTurns) struct ConsoleBrowserTests {
    static let artefacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent(".test-artefacts/console").path

    @Test func supportFindsAUserReadsWhyAndGrantsAndFinanceSeesTheCharts() async throws {
        guard Chromium.binary != nil else {
            Issue.record("chromium is not installed (apt-get install chromium; Tools/dev test installs it)")
            return
        }
        try await HeavyTests.oneAtATime {
            let server = try await TestServer.start()
            defer { Task { await server.stop() } }
            try await ConsoleTests.refundedSubscriber(server, user: "ana")
            let browser = try Chromium()
            defer { browser.close() }
            try await browser.open()
            // Every page shown is also read for what a template leaks when a value is missing.
            func shot(_ name: String) async throws {
                try await browser.screenshot(to: Self.artefacts + "/\(name).png")
                let words = try await browser.text().split(whereSeparator: { $0.isWhitespace || $0 == "," || $0 == ":" })
                let leaked = words.filter { ["nil", "null", "undefined", "NaN"].contains($0) || $0.hasPrefix("Optional(") }
                #expect(leaked.isEmpty, "\(name) shows placeholder text: \(leaked)")
            }

            // Sign in.
            try await browser.go(server.baseURL + "/console")
            #expect(try await browser.text("h1") == "Sign in")
            try await browser.submit(["#key": server.adminKey], button: "#sign-in")
            #expect(try await browser.text().contains(TestServer.bundleID), "the apps page after signing in")
            try await shot("1-signed-in")

            // Find the user by the transaction id on Apple's receipt, open the page.
            try await browser.go(server.baseURL + "/console/apps/\(TestServer.bundleID)")
            try await browser.submit(["#q": "cs-3"], button: "#find")
            #expect(try await browser.text("#results").contains("ana"))
            try await browser.loading { try await browser.evaluate("document.querySelector('#results a').click()") }
            let why = try await browser.text("#entitlements")
            #expect(why.contains("pro") && why.contains(": refunded"), "\(why)")
            try await shot("2-user-refunded")

            // As of two days ago the subscription was active.
            let earlier = String(RFC3339Text.string(Date(timeIntervalSinceNow: -2 * 86_400)).prefix(19))
            try await browser.submit(["#at": earlier], button: "#show")
            let then = try await browser.text("#entitlements")
            #expect(then.contains("active until"), "\(then)")
            try await shot("3-user-two-days-ago")

            // A grant, then its revocation.
            try await browser.go(server.baseURL + "/console/apps/\(TestServer.bundleID)/users/ana")
            try await browser.submit(
                ["#grant-entitlement": "vip", "#grant-days": "7", "#grant-reason": "sorry for the outage"], button: "#grant")
            #expect(try await browser.text("#grants").contains("sorry for the outage"))
            #expect(try await browser.text("#entitlements").contains("vip"))
            try await shot("4-granted")
            try await browser.submit(["#grants input[name=reason]": "granted by mistake"], button: "#grants .revoke")
            #expect(try await !browser.text("#grants").contains("sorry for the outage"), "the revoked grant is gone")
            #expect(try await browser.text("#timeline").contains("PromotionalRevoked"))
            try await shot("5-revoked")

            // Both actions are in the audit log, by the key that made them.
            try await browser.loading {
                try await browser.evaluate("[...document.querySelectorAll('header a')].find(a => a.textContent == 'audit log').click()")
            }
            let audit = try await browser.text()
            #expect(
                audit.contains("grant.created") && audit.contains("grant.revoked") && audit.contains("app.configured"),
                "\(audit.prefix(300))")
            try await shot("5b-audit-log")

            // Apple's notices about the app: a withdrawn consent and an external purchase token, and
            // the user they concern.
            for body in [
                try server.app.notificationV2(
                    "EXTERNAL_PURCHASE_TOKEN", subtype: "UNREPORTED",
                    body: .externalPurchaseToken(id: "SANDBOX_ext-1", created: Date())),
                try server.app.notificationV2(
                    "RESCIND_CONSENT",
                    body: .appData(
                        SimulatedAppTransaction(
                            appTransactionID: "704000000000001", originalPurchaseDate: Date(timeIntervalSinceNow: -86_400)))),
            ] {
                #expect(try await server.send("POST", "/v1/apps/\(TestServer.bundleID)/notifications/apple", body: body).status == 200)
            }
            try await browser.go(server.baseURL + "/console/apps/\(TestServer.bundleID)")
            let notices = try await browser.text("#notices")
            #expect(notices.contains("external purchase token SANDBOX_ext-1") && notices.contains("consent withdrawn"), "\(notices)")
            try await shot("6-app-notices")

            // Finance: the charts.
            try await browser.go(server.baseURL + "/console/apps/\(TestServer.bundleID)/metrics?environment=Sandbox")
            #expect(try await browser.evaluate("document.querySelectorAll('svg.chart').length") as? Int == 7)
            #expect(try await browser.evaluate("document.querySelectorAll('svg.chart polyline').length") as? Int ?? 0 >= 3, "lines drawn")
            #expect(
                try await browser.evaluate(
                    "[...document.querySelectorAll('svg.chart polyline')].every(l => getComputedStyle(l).stroke.startsWith('rgb('))")
                    as? Bool == true,
                "each line has a colour")
            try await shot("7-metrics")
            print("console screenshots: \(Self.artefacts)")
        }
    }
}
