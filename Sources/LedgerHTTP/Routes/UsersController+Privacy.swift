import Foundation
import Hummingbird
import LedgerAccess
import LedgerCore
import LedgerIngestion
import LedgerPrivacy

/// A user's privacy rights (scope `admin`): everything held about them, and their erasure.
extension UsersController {
    /// Everything held about the user (a subject-access request): admin, as it includes the raw
    /// evidence and the admin actions aimed at them.
    @Sendable func export(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.admin)
        _ = try await directory.app(bundleID)
        return JSONBody.response(bytes: try await subjectAccess.export(bundleID: bundleID, userID: userID))
    }

    /// Erasure of the user's identifiers (the books stay, under a pseudonym), audited under the
    /// pseudonym: the id is what is being erased.
    @Sendable func erase(_ request: Request, context: LedgerRequestContext) async throws -> Response {
        let (bundleID, userID) = try context.appAndUser(.admin)
        _ = try await directory.app(bundleID)
        try Identifier.erasedUserID.check(userID)
        let report = try await erasures.erase(bundleID: bundleID, userID: userID, actor: context.key?.name ?? "admin")
        let answer = Wire.Erasure(report)
        try await context.audit(audit, "user.erased", target: "\(bundleID)/users/\(report.pseudonym)", bundleID: bundleID, after: answer)
        return try JSONBody.response(answer)
    }
}
