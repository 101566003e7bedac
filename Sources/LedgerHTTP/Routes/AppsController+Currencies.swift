import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion

/// The app's currencies (defined by `admin`): their names and how long what is granted of them
/// lasts. Products and the game server grant them; spends draw on them.
extension AppsController {
    @Sendable func defineCurrency(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.admin)
        let code = try context.parameters.require("code")
        let body = try await JSONBody.decode(Wire.CurrencyBody.self, from: request, context: context)
        let currency = try Self.currency(code, body)
        let before = try await directory.find(bundleID)?.catalogue.currentCurrencies.first { $0.code == code }.map(Wire.CurrencyBody.init)
        _ = try await directory.define(currency, in: bundleID)
        try await context.audit(
            audit, "currency.defined", target: "\(bundleID)/currencies/\(code)", bundleID: bundleID, before: before,
            after: Wire.CurrencyBody(currency))
        return try JSONBody.response(Wire.CurrencyBody(currency))
    }

    @Sendable func currencies(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.read)
        struct Currencies: Encodable { var currencies: [Wire.CurrencyBody] }
        let defined = try await directory.app(bundleID).catalogue.currentCurrencies
        return try JSONBody.response(Currencies(currencies: defined.map(Wire.CurrencyBody.init)))
    }

    static func currency(_ code: String, _ body: Wire.CurrencyBody) throws -> CurrencyDefinition {
        try Identifier.currencyCode.check(code)
        if let named = body.code, named != code { throw LedgerError(.invalidCurrency, "code in the body must be the path's, \(code)") }
        guard !body.name.isEmpty, body.name.unicodeScalars.count <= 200 else {
            throw LedgerError(.invalidCurrency, "name must be 1–200 characters")
        }
        var after: ISODuration?
        if let text = body.expires_after {
            guard let duration = ISODuration(text), duration.added(to: Date(timeIntervalSince1970: 0)) > Date(timeIntervalSince1970: 0)
            else { throw LedgerError(.invalidCurrency, "expires_after is a positive ISO 8601 duration, e.g. P7D or PT12H") }
            after = duration
        }
        let at = try Wire.instant(body.expires_at, field: "expires_at", refusedAs: .invalidCurrency)
        return CurrencyDefinition(code: code, name: body.name, expiresAfter: after, expiresAt: at)
    }
}
