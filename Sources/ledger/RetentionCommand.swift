import AppStoreServerAPI
import ArgumentParser
import Foundation
import LedgerCore
import LedgerIngestion
import LedgerServer

/// `ledger retention …`: the app's retention messages at Apple, managed from the command line with
/// the app's In-App Purchase key — what the API's `…/retention/messages`, `…/images`, `…/defaults`
/// and `…/performance-test` do, for an operator at a terminal.
struct RetentionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Manage the app's retention messages at Apple and run Apple's performance test.",
        discussion: """
            Messages and images are checked against Apple's limits before they are sent (header 66 characters, body
            144, alt text 150, five bullet points; PNG without transparency). Apple reviews what is uploaded: `list`
            shows each one's state. See docs/retention.md.
            Example: ledger retention upload-message --app com.example.game --id 0a9e… --header "Stay" --body "50 % off"
            """,
        subcommands: [List.self, UploadMessage.self, UploadImage.self, Default.self, RealtimeURL.self, PerformanceTest.self])

    struct Target: ParsableArguments {
        @OptionGroup var database: DatabaseOptions
        @Option(help: ArgumentHelp("The app's bundle id.", valueName: "bundle-id")) var app: String
        @Option(help: "Apple's environment: Production or Sandbox.") var environment = "Production"

        var appleEnvironment: AppleEnvironment {
            get throws {
                guard let parsed = AppleEnvironment(rawValue: environment), [.production, .sandbox].contains(parsed) else {
                    throw ValidationError("--environment is Production or Sandbox")
                }
                return parsed
            }
        }

        /// Runs `body` with the server's parts (Apple's client and the app's key among them).
        func withLookups<T: Sendable>(_ body: @escaping @Sendable (AppleLookups) async throws -> T) async throws -> T {
            let logger = LoggingSetup.logger("ledger.retention")
            return try await ServeCommand.withServices(database, settings: try database.settings, logger: logger) { services in
                try await body(services.lookups)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every message and image uploaded, with Apple's review state.")
        @OptionGroup var target: Target

        func run() async throws {
            let (app, environment) = (target.app, try target.appleEnvironment)
            let (messages, images) = try await target.withLookups {
                try await $0.retentionMessages(bundleID: app, environment: environment)
            }
            for message in messages { print("message \(message.messageIdentifier)  \(message.messageState ?? "?")") }
            for image in images { print("image   \(image.imageIdentifier)  \(image.imageState ?? "?")  \(image.imageSize ?? "")") }
            if messages.isEmpty && images.isEmpty { print("nothing uploaded in \(environment.rawValue)") }
        }
    }

    struct UploadMessage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload-message", abstract: "Upload a message for Apple's review (a new UUID each time).")
        @OptionGroup var target: Target
        @Option(help: "The message's UUID (yours to choose; Apple refuses one used before).") var id: String
        @Option(help: "Up to 66 characters.") var header: String
        @Option(help: "Up to 144 characters.") var body: String
        @Option(help: ArgumentHelp("An uploaded image's UUID.", valueName: "uuid")) var image: String?
        @Option(help: "The image's alt text (up to 150 characters).") var altText: String?
        @Flag(help: "Put the header above the image (needs --image).") var headerAboveImage = false

        func run() async throws {
            guard let id = UUID(uuidString: id) else { throw ValidationError("--id is a UUID") }
            let message = RetentionMessage(
                header: header, body: body,
                image: image.map { .init(imageIdentifier: $0.lowercased(), altText: altText ?? "") },
                headerPosition: headerAboveImage ? "ABOVE_IMAGE" : nil)
            if let problem = message.problem { throw ValidationError(problem) }
            let (app, environment) = (target.app, try target.appleEnvironment)
            try await target.withLookups { try await $0.uploadRetentionMessage(bundleID: app, id: id, message, environment: environment) }
            print("uploaded message \(id.uuidString.lowercased()); Apple reviews it (ledger retention list)")
        }
    }

    struct UploadImage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload-image", abstract: "Upload a PNG (no transparency) for Apple's review.")
        @OptionGroup var target: Target
        @Option(help: "The image's UUID (yours to choose).") var id: String
        @Option(help: ArgumentHelp("The PNG file.", valueName: "path")) var file: String
        @Option(help: "FULL_SIZE or BULLET_POINT.") var size = "FULL_SIZE"

        func run() async throws {
            guard let id = UUID(uuidString: id) else { throw ValidationError("--id is a UUID") }
            let png = try Data(contentsOf: URL(fileURLWithPath: file))
            if let problem = RetentionMessage.imageProblem(png) { throw ValidationError("\(file): \(problem)") }
            let (app, environment, size) = (target.app, try target.appleEnvironment, size)
            try await target.withLookups {
                try await $0.uploadRetentionImage(bundleID: app, id: id, png: png, size: size, environment: environment)
            }
            print("uploaded image \(id.uuidString.lowercased()); Apple reviews it (ledger retention list)")
        }
    }

    struct Default: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the message Apple shows for a product in a locale when the ledger does not answer in time.")
        @OptionGroup var target: Target
        @Option(help: "The subscription's product id.") var product: String
        @Option(help: "A locale such as en-US.") var locale: String
        @Option(help: "An approved text message's UUID.") var message: String

        func run() async throws {
            guard let message = UUID(uuidString: message) else { throw ValidationError("--message is a UUID") }
            let (app, environment, product, locale) = (target.app, try target.appleEnvironment, product, locale)
            try await target.withLookups {
                try await $0.setDefaultRetentionMessage(
                    bundleID: app, productID: product, locale: locale, messageID: message, environment: environment)
            }
            print("\(product) in \(locale): default message \(message.uuidString.lowercased())")
        }
    }

    struct RealtimeURL: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "realtime-url",
            abstract: "Set where Apple sends its realtime requests (production only after a sandbox performance test passed).")
        @OptionGroup var target: Target
        @Option(help: "https://…/v1/apps/<bundle>/apple/retention") var url: String

        func run() async throws {
            let (app, environment, url) = (target.app, try target.appleEnvironment, url)
            try await target.withLookups { try await $0.setRealtimeURL(bundleID: app, url: url, environment: environment) }
            print("\(environment.rawValue) realtime URL: \(url)")
        }
    }

    struct PerformanceTest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "performance-test",
            abstract: "Run Apple's sandbox performance test of the realtime endpoint and wait for its result.")
        @OptionGroup var target: Target
        @Option(help: "A sandbox subscription's original transaction id for Apple's requests to name.") var transaction: String
        @Option(help: "Set the sandbox realtime URL to this first (https://…/v1/apps/<bundle>/apple/retention).") var url: String?
        @Option(help: "Seconds to wait for Apple's result.") var wait = 300

        func run() async throws {
            let (app, transaction, url, wait) = (target.app, transaction, url, wait)
            let result = try await target.withLookups { lookups -> PerformanceTestResult in
                let started = try await lookups.startRetentionPerformanceTest(
                    bundleID: app, originalTransactionID: transaction, realtimeURL: url)
                print("Apple's test \(started.requestId) started")
                let deadline = ContinuousClock.now + .seconds(wait)
                while true {
                    let result = try await lookups.retentionPerformanceTest(bundleID: app, requestID: started.requestId)
                    if result.result != "PENDING" || ContinuousClock.now > deadline { return result }
                    try await Task.sleep(for: .seconds(2))
                }
            }
            let times = result.responseTimes
            print(
                "\(result.result): success rate \(result.successRate.map(String.init) ?? "?") %, p50 \(times?.p50 ?? 0) ms, p90 \(times?.p90 ?? 0) ms, "
                    + "p99 \(times?.p99 ?? 0) ms")
            for (failure, count) in (result.failures ?? [:]).sorted(by: { $0.key < $1.key }) { print("  \(failure): \(count)") }
            if result.result == "FAIL" { throw ExitCode(1) }
        }
    }
}
