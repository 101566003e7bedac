import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerProjections

/// `GET /v1/apps/{bundle_id}/exports/transactions` (scope `finance`): the finance view streamed
/// page by page, so a month of millions of rows needs no more memory than one page.
struct ExportController {
    let directory: AppDirectory
    let exports: FinanceExports

    func register(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/apps/:bundle_id/exports/transactions", use: transactions)
        group.get("/apps/:bundle_id/exports/currencies", use: currencies)
    }

    /// The currency ledger, a row per currency and UTC day from `from` to `to` (dates, at most
    /// 366 days), as known at `known_at`.
    @Sendable func currencies(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.finance)
        _ = try await directory.app(bundleID)
        guard let from = try request.instant("from"), let to = try request.instant("to") else {
            throw LedgerError(.invalidTime, "from and to are required: the days to close, e.g. from=2026-10-01&to=2026-11-01")
        }
        let format = try Self.format(request)
        let export = try CurrencyExport(bundleID: bundleID, from: from, to: to, knownAt: try request.knownAt())
        let pool = try await exports.pool()
        // Every user is read before the first row is known: in the body, as the transactions'
        // export is, so an app of millions of players is not cut short by the request's deadline.
        let body = ResponseBody { writer in
            try await writer.write(ByteBuffer(string: CurrencyExport.text(try await export.days(on: pool), as: format)))
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: format == .csv ? "text/csv; charset=utf-8; header=present" : "application/x-ndjson",
                .contentDisposition: "attachment; filename=\"\(bundleID)-currencies.\(format.rawValue)\"",
            ], body: body)
    }

    @Sendable func transactions(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let bundleID = try context.app(.finance)
        _ = try await directory.app(bundleID)
        let export = try Self.export(bundleID: bundleID, request)
        let format = try Self.format(request)
        let opened = try await exports.open(export)
        let body = ResponseBody { writer in
            if format == .csv { try await writer.write(ByteBuffer(string: FinanceExport.csvHeader())) }
            try await opened.forEachPage { rows in
                var buffer = ByteBuffer()
                for row in rows { buffer.writeString(format == .csv ? FinanceExport.csvLine(row) : FinanceExport.jsonLine(row)) }
                try await writer.write(buffer)
            }
            try await writer.finish(nil)
        }
        let filename = "\(bundleID)-transactions.\(format.rawValue)"
        return Response(
            status: .ok,
            headers: [
                .contentType: format == .csv ? "text/csv; charset=utf-8; header=present" : "application/x-ndjson",
                .contentDisposition: "attachment; filename=\"\(filename)\"",
            ], body: body)
    }

    static func format(_ request: Request) throws -> FinanceExport.Format {
        guard let text = request.uri.queryParameters["format"] else { return .csv }
        guard let format = FinanceExport.Format(rawValue: String(text)) else { throw LedgerError(.invalidFormat, "format is csv or jsonl") }
        return format
    }

    static func export(bundleID: String, _ request: Request) throws -> FinanceExport {
        let parameters = request.uri.queryParameters
        let environment: AppleEnvironment
        let requested: String? = parameters["environment"].map { String($0) }
        switch requested {
        case nil, "Production": environment = .production
        case "Sandbox": environment = .sandbox
        default: throw LedgerError(.invalidEnvironment, "environment is Production (the default) or Sandbox")
        }
        let from = try request.instant("from"), to = try request.instant("to")
        if let from, let to, from >= to { throw LedgerError(.invalidTime, "from must be before to") }
        return FinanceExport(bundleID: bundleID, environment: environment, from: from, to: to, knownAt: try request.knownAt())
    }
}
