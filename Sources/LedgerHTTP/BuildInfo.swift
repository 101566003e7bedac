/// What this binary is: its release's version and the commit it was built from, answered by
/// `ledger --version` and `/healthz` so an operator (and support) knows what is running where.
/// A build from a working tree is `dev`; a release build states both here before it builds.
package enum BuildInfo {
    package static let version = "0.10.0-dev"
    package static let commit = "dev"

    /// `0.9.0 (commit 1a2b3c4)`.
    package static var description: String { "\(version) (commit \(commit))" }
}
