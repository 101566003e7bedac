import AppStoreServerAPI
import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerProjections
import Mustache

extension ConsoleController {
    /// The audit log (admin sessions; a session limited to one app sees that app's entries).
    func auditPage(_ request: Request, _ session: ConsoleSessions.Session) async throws -> Response {
        guard session.may(.admin) else { throw ConsolePageError(status: .forbidden, message: "The audit log is for admin keys.") }
        let after = request.uri.queryParameters.get("after").flatMap { Int64($0) } ?? 0
        let limit = 100
        let entries = try await console.audit.page(after: after, limit: limit, bundleID: session.bundleID)
        let rows: [[String: String]] = entries.map { entry in
            let change = [entry.before.map { "before: " + $0 }, entry.after.map { "after: " + $0 }].compactMap { $0 }.joined(
                separator: "\n")
            return [
                "position": String(entry.position), "recorded": RFC3339.string(entry.recordedAt), "actor": entry.actor,
                "action": entry.action,
                "target": entry.target, "request": entry.requestID, "change": change,
            ]
        }
        var values: [String: Any] = ["entries": rows]
        if entries.count == limit, let last = entries.last { values["next"] = String(last.position) }
        return render("audit", Merged(frame("Audit log", app: nil, session), values), session: session)
    }

    func appsPage(_ session: ConsoleSessions.Session) async throws -> Response {
        let apps = try await console.directory.bundleIDs().filter(session.covers)
        return render("apps", Merged(frame("Apps", app: nil, session), ["apps": apps]), session: session)
    }

    func appPage(_ bundleID: String, _ session: ConsoleSessions.Session) async throws -> Response {
        guard let app = try await console.directory.find(bundleID) else {
            throw ConsolePageError(status: .notFound, message: "No app \(bundleID) is configured.")
        }
        let products = app.products.sorted { $0.productID < $1.productID }.map { product -> [String: String] in
            [
                "id": product.productID, "type": product.type.rawValue, "entitlements": product.entitlements.joined(separator: ", "),
                "grants": product.grants.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "),
            ]
        }
        let outstanding = try await console.reader.outstandingBalances(bundleID: bundleID)
        let defined = Dictionary(app.catalogue.currentCurrencies.map { ($0.code, $0) }, uniquingKeysWith: { a, _ in a })
        let codes = Set(defined.keys).union(app.products.flatMap(\.grants.keys)).union((outstanding ?? [:]).keys).sorted()
        let currencies = codes.map { code -> [String: String] in
            let currency = defined[code]
            let expiry = [currency?.expiresAfter.map { "\($0) after each grant" }, currency?.expiresAt.map { "by \(Explanation.day($0))" }]
                .compactMap { $0 }.joined(separator: ", ")
            return [
                "code": code, "name": currency?.name ?? "(granted by a product, not set up)",
                "expiry": expiry.isEmpty ? "never" : expiry,
                "outstanding": outstanding.map { String($0[code] ?? 0) } ?? "see the currency export (over 5,000 users)",
            ]
        }
        let values: [String: Any] = [
            "currencies": currencies,
            "environments": app.settings.environments.map(\.rawValue).joined(separator: ", "),
            "appleAppID": app.settings.appleAppID.map(String.init) ?? "not set",
            "restorePolicy": app.settings.restorePolicy.rawValue,
            "sharedSecret": !app.hasSharedSecret ? "not configured" : "configured (never shown)",
            "serverAPI": app.serverAPIKeyID.map { "configured: key \($0) (never shown)" } ?? "not configured",
            "products": products, "query": "",
            "retention": try await retentionRows(app),
            "refusals": console.refusals().map { ["code": $0.code, "count": String($0.count)] },
            "notices": try await console.reader.appNotices(bundleID: bundleID).compactMap { fact -> [String: String]? in
                switch fact.event {
                case .appleNotificationReceived(let notification):
                    return [
                        "signed": RFC3339.string(fact.occurredAt), "type": notification.notificationType,
                        "subtype": notification.subtype ?? "",
                        "environment": notification.environment?.rawValue ?? "", "detail": Explanation.notice(notification),
                        "evidence": fact.evidence.map { "/console/apps/\(Self.path(bundleID))/evidence/\($0)" } ?? "",
                    ]
                case .massRenewalExtensionRequested(let request):
                    return [
                        "signed": RFC3339.string(fact.occurredAt), "type": "extension asked of Apple", "subtype": "",
                        "environment": request.environment.rawValue, "detail": UserPage.summary(fact.event), "evidence": "",
                    ]
                default:
                    return nil
                }
            },
        ]
        return render("app", Merged(frame(bundleID, app: bundleID, session), values), session: session)
    }

    /// One box for a user id, a transaction or original transaction id, an appAccountToken, or an
    /// order id (asked of Apple when the app has an App Store Server API key).
    func findPage(_ bundleID: String, query raw: String, _ session: ConsoleSessions.Session) async throws -> Response {
        let query = raw.trimmingCharacters(in: .whitespaces)
        var results: [[String: String]] = [], notes: [String] = []
        func user(_ id: String, _ why: String) {
            results.append(["label": id, "link": "/console/apps/\(Self.path(bundleID))/users/\(Self.path(id))", "why": why])
        }
        if !query.isEmpty, query.utf8.count <= 255 {
            let found = try await console.reader.search(bundleID: bundleID, for: query)
            if found.isUser { user(query, "a user") }
            for (owner, original) in found.owners { user(owner, "owns or owned original transaction \(original)") }
            if let token = UUID(uuidString: query), let owner = try await console.tokens.user(of: token, bundleID: bundleID) {
                user(owner, "appAccountToken \(token.uuidString.lowercased())")
            }
            if results.isEmpty, query.range(of: "^[A-Z0-9]{6,20}$", options: .regularExpression) != nil {
                do {
                    let order = try await console.lookups.order(bundleID: bundleID, orderID: query)
                    for line in order.lines {
                        if let owner = line.owner {
                            user(
                                owner,
                                "order \(order.orderID): \(line.transaction.productID), transaction \(line.transaction.transactionID)")
                        } else {
                            notes.append(
                                "Order \(order.orderID): transaction \(line.transaction.transactionID) (\(line.transaction.productID)) is owned by nobody yet."
                            )
                        }
                    }
                } catch let error as LedgerError {
                    notes.append("Apple's order lookup: \(error.message)")
                }
            }
        }
        return render(
            "find", Merged(frame("Find", app: bundleID, session), ["query": query, "results": results, "notes": notes]), session: session)
    }

    func userPage(_ bundleID: String, user userID: String, request: Request, _ session: ConsoleSessions.Session) async throws -> Response {
        let parameters = request.uri.queryParameters
        let at = parameters["at"].flatMap { Self.instant(String($0)) },
            knownAt = parameters["known_at"].flatMap { Self.instant(String($0)) }
        _ = try await console.directory.app(bundleID)
        let state =
            at == nil && knownAt == nil
            ? try await console.reader.currentState(bundleID: bundleID, userID: userID)
            : try await console.reader.state(bundleID: bundleID, userID: userID, at: at ?? knownAt!, knownAt: knownAt)
        let trail = try await console.reader.auditTrail(bundleID: bundleID, userID: userID, knownAt: knownAt)
        let page = UserPage.build(
            state: state, trail: trail, userID: userID, evidenceLink: "/console/apps/\(Self.path(bundleID))/evidence/")
        let note =
            (at == nil && knownAt == nil ? "Now" : "As of \(RFC3339.string(state.asOf))")
            + (knownAt.map { ", by what the ledger knew at \(RFC3339.string($0))" } ?? ", by everything the ledger knows") + "."
        var values: [String: Any] = [
            "userID": userID, "userPath": Self.path(userID), "page": page, "hasTransferred": !page.transferred.isEmpty,
            "atInput": at.map(Self.inputValue) ?? "", "knownAtInput": knownAt.map(Self.inputValue) ?? "", "asOfNote": note,
        ]
        if let message = parameters["message"].map(String.init), !message.isEmpty {
            values["message"] = message.removingPercentEncoding ?? message
        }
        return render("user", Merged(frame("User \(userID)", app: bundleID, session), values), session: session)
    }

    /// The app's retention rules in order, each with how often it answered and how many of those
    /// subscriptions renewed afterwards; the default message last.
    func retentionRows(_ app: AppConfiguration) async throws -> [[String: String]] {
        guard let retention = app.settings.retention else { return [] }
        let outcomes = try await console.retention.outcomes(bundleID: app.bundleID)
        func row(_ name: String?, _ when: String, _ answer: String) -> [String: String] {
            let outcome = outcomes.first { $0.rule == name }
            return [
                "rule": name ?? "default", "when": when, "answer": answer, "shown": String(outcome?.shown ?? 0),
                "saved": String(outcome?.saved ?? 0),
            ]
        }
        var rows = retention.rules.map { rule in
            row(rule.name, Self.describe(rule.when), rule.answer.kind + (rule.answer.offerOrProduct.map { " " + $0 } ?? ""))
        }
        if let fallback = retention.defaultMessage {
            rows.append(row(nil, "nothing else applies", "message " + fallback.uuidString.lowercased()))
        }
        return rows
    }

    static func describe(_ when: RetentionCondition) -> String {
        var parts: [String] = []
        if let products = when.product { parts.append("product " + products.joined(separator: " or ")) }
        if let locales = when.locale { parts.append("locale " + locales.joined(separator: " or ")) }
        if let days = when.paidDaysAtLeast { parts.append("paid \(days)+ days") }
        if let renewals = when.renewalsAtLeast { parts.append("renewed \(renewals)+ times") }
        if let retry = when.inBillingRetry { parts.append(retry ? "in billing retry" : "not in billing retry") }
        if let refunded = when.refundedBefore { parts.append(refunded ? "refunded before" : "never refunded") }
        return parts.isEmpty ? "always" : parts.joined(separator: ", ")
    }

    /// One piece of evidence, decoded: a JWS's payload, a notification's, a receipt's answer.
    func evidencePage(_ bundleID: String, digest: String, _ session: ConsoleSessions.Session) async throws -> Response {
        guard digest.hasPrefix("sha256:"), digest.utf8.count == 71, let (kind, body) = try await console.evidence.entry(of: digest) else {
            throw ConsolePageError(status: .notFound, message: "No evidence \(digest).")
        }
        let described = EvidencePage(kind: kind, body: body)
        let values: [String: any Sendable] = [
            "digest": digest, "body": described.body, "source": described.source, "hasSummary": !described.summary.isEmpty,
            "summary": described.summary.map { ["field": $0.field, "value": $0.value] as [String: any Sendable] },
        ]
        return render("evidence", Merged(frame("Evidence", app: bundleID, session), values), session: session)
    }

    /// An instant from a date picker (`2026-11-24T10:00[:00]`, taken as UTC) or RFC 3339.
    static func instant(_ text: String) -> Date? {
        if text.isEmpty { return nil }
        if let exact = RFC3339.parseInstant(text) { return exact }
        return RFC3339.parseInstant(text + (text.count == 16 ? ":00Z" : "Z"))
    }

    static func inputValue(_ date: Date) -> String { String(RFC3339.string(date).prefix(19)) }
}

/// A page's frame and its own values, as one object for a template: one dictionary, read
/// without reflection (a row's lookup that misses walks up to it, a thousand times on a long page).
struct Merged: MustacheParent {
    private let fields: [String: Any]

    init(_ frame: Any, _ values: [String: Any]) {
        var fields: [String: Any] = [:]
        for child in Mirror(reflecting: frame).children {
            // A missing value is absent, not `Optional.none`: Mustache would take that for a
            // value and print "nil" (the header's app link did, on the apps page).
            guard let label = child.label, let value = Self.unwrapped(child.value) else { continue }
            fields[label] = value
        }
        self.fields = fields.merging(values) { _, value in value }
    }

    func child(named name: String) -> Any? { fields[name] }

    /// The value inside an optional, nil for none; anything else as it is.
    static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.map(\.value)
    }
}
