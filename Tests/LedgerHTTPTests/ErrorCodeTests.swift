import Foundation
import Hummingbird
import LedgerCore
import LedgerFacts
import LedgerPostgres
import Testing

@testable import LedgerHTTP

/// The error codes are the API's contract: docs/api.md lists each under the status it answers
/// with, and the enum is the only place a code is spelt.
@Suite struct ErrorCodeTests {
    static let apiDoc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/api.md")

    /// Each status row of the Errors table (`| status | when | codes |`), with the codes it lists.
    static func documented() throws -> [Int: Set<String>] {
        let text = try String(contentsOf: apiDoc, encoding: .utf8)
        var rows: [Int: Set<String>] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, let status = Int(cells[1]), (400..<600).contains(status) else { continue }
            // The codes, in backticks; a note in parentheses after a code is not one.
            let listed = cells[3].replacingOccurrences(of: #"\([^)]*\)"#, with: "", options: .regularExpression)
            let codes = listed.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }
            rows[status, default: []].formUnion(codes)
        }
        return rows
    }

    @Test func everyCodeIsDocumentedUnderTheStatusItAnswersWith() throws {
        let rows = try Self.documented()
        #expect(rows.count >= 9, "the Errors table was not found in docs/api.md")
        for code in LedgerError.Code.allCases {
            let status = Int(LedgerError(code, "").status.code)
            #expect(
                rows[status]?.contains(code.rawValue) == true,
                "\(code.rawValue) is answered with \(status) but not listed there in docs/api.md")
        }
    }

    @Test func everyDocumentedCodeIsOneTheLedgerCanAnswer() throws {
        let known = Set(LedgerError.Code.allCases.map(\.rawValue))
        for (status, codes) in try Self.documented() {
            for code in codes {
                #expect(known.contains(code), "docs/api.md lists \(code) under \(status), and no error has that code")
            }
        }
    }

    @Test func aRefusalDecidesItsStatusAndAnUnavailableOneSaysWhenToComeBack() throws {
        #expect(LedgerError(.insufficientBalance, "").status == .conflict)
        #expect(
            LedgerError(.unknownAppAccountToken, "", kind: .invalid).status == .badRequest, "a kind given says otherwise than the code's")
        #expect(LedgerError(.appleUnavailable, "").status == .serviceUnavailable)
    }

    @Test func failuresBelowTheEdgeAreAnsweredAsTheySayWithoutTheirWords() {
        let away = PostgresError(code: .connectionLost, message: "server closed the connection unexpectedly")
        let transient = ErrorMiddleware<BasicRequestContext>.refusal(away)
        #expect(transient.code == .databaseUnavailable && transient.status == .serviceUnavailable)
        let schema = PostgresError(code: .server, sqlState: "42P01", message: #"relation "ledger.secret_table" does not exist"#)
        let fault = ErrorMiddleware<BasicRequestContext>.refusal(schema)
        #expect(fault.code == .internalError && !fault.message.contains("secret_table"), "the database's words stay in the log")
        let unknownRoute = ErrorMiddleware<BasicRequestContext>.refusal(HTTPError(.notFound))
        #expect(unknownRoute.code == .notFound)
        struct Unexpected: Error {}
        #expect(ErrorMiddleware<BasicRequestContext>.refusal(Unexpected()).code == .internalError)
    }
}
