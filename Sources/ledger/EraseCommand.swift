import ArgumentParser
import Foundation
import LedgerAccess
import LedgerEventStore
import LedgerPostgres
import LedgerPrivacy
import LedgerProjections
import LedgerServer
import Logging

/// `ledger erase --app B --user U`: the same erasure as `DELETE /v1/apps/{b}/users/{u}`, for an
/// operator at a terminal (docs/privacy.md). Prints the pseudonym that now stands for the user.
struct EraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase",
        abstract: "Erase a user's identifiers (user id, appAccountTokens); the books stay, under a pseudonym.",
        discussion: """
            Afterwards the user id and the user's appAccountTokens are nowhere in the database: every fact, projection,
            finance row, change and webhook delivery names a pseudonym (erased:…) instead, and the raw evidence that
            carried a token is emptied (its digest kept). Purchases, renewals and refunds stay, with their amounts.
            The pseudonym is printed once; keep it with the request if the person may ask again. Recorded in the audit log.
            """)

    @OptionGroup var database: DatabaseOptions
    @Option(help: ArgumentHelp("The app (bundle id).", valueName: "bundle-id")) var app: String
    @Option(help: ArgumentHelp("The user id to erase.", valueName: "user-id")) var user: String

    func run() async throws {
        let logger = LoggingSetup.logger("ledger.erase")
        let (app, user) = (self.app, self.user)
        let actor = "ledger erase (\(ProcessInfo.processInfo.userName))"
        let report = try await database.withDatabase(logger: logger) { opened, _ in
            let pool = PostgresPool(configuration: opened.application, size: 2, logger: logger)
            let erased = await Result { try await Self.erase(app: app, user: user, actor: actor, pool: pool, logger: logger) }
            await pool.close()
            return try erased.get()
        }
        print(
            "erased: \(report.eventsRewritten) events rewritten, \(report.streamsRechained) streams re-chained, \(report.rowsRewritten) other rows, "
                + "\(report.tokens) appAccountTokens replaced, \(report.evidenceShredded) pieces of evidence emptied. The user is now:")
        print(report.pseudonym)
    }

    static func erase(app: String, user: String, actor: String, pool: PostgresPool, logger: Logger) async throws -> UserErasures.Report {
        try await whilePostgres("erasing the user") {
            // No projection worker runs here: a running server applies the record; waiting a
            // moment lets this command's answer reflect it when one does.
            let erasures = UserErasures(
                store: EventStore(pool: pool, logger: logger),
                freshness: ProjectionFreshness(pool: pool, progress: nil, timeout: .seconds(2)),
                sources: LedgerServices.privacySources, logger: logger)
            let report = try await erasures.erase(bundleID: app, userID: user, actor: actor)
            struct Erased: Encodable { var pseudonym: String; var events_rewritten: Int; var evidence_shredded: Int }
            try await AuditLog(pool: pool).record(
                actor: actor, keyID: nil, requestID: "cli-" + UUID().uuidString.lowercased(), action: "user.erased",
                target: "\(app)/users/\(report.pseudonym)", bundleID: app, before: nil,
                after: AuditLog.json(
                    Erased(
                        pseudonym: report.pseudonym, events_rewritten: report.eventsRewritten, evidence_shredded: report.evidenceShredded)))
            return report
        }
    }
}

extension Result where Failure == any Error {
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
