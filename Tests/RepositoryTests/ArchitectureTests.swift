import Foundation
import Testing

/// docs/architecture.md says which of the package's modules each one imports; `Package.swift`
/// declares them. Both are read here against the `import` lines of the sources, so the picture a
/// newcomer reads is the code's, and a new import is a decision someone writes down.
@Suite struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Each module's folder: `Sources/<name>`, and the tools' targets under `Tools/`.
    static let folders: [String: String] = {
        var folders: [String: String] = [:]
        let sources = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)) ?? []
        for name in sources { folders[name] = "Sources/" + name }
        folders["AppStoreSimulator"] = "Tools/AppStoreSimulator"
        folders["GooglePlaySimulator"] = "Tools/GooglePlaySimulator"
        folders["WebhookReceiver"] = "Tools/WebhookReceiver"
        folders["OTLPReceiver"] = "Tools/OTLPReceiver"
        folders["LoopbackServer"] = "Tools/LoopbackServer"
        folders["appstore-simulator"] = "Tools/Simulator"
        folders["ledger-bench"] = "Tools/Bench"
        return folders
    }()

    /// Modules importable by name (`appstore-simulator` and `ledger-bench` are executables).
    static let ours = Set(folders.keys).subtracting(["appstore-simulator", "ledger-bench"])

    /// The package's modules a module's sources import.
    static func imports(of module: String) throws -> Set<String> {
        let folder = root.appendingPathComponent(folders[module]!)
        var found: Set<String> = []
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        for file in files where file.pathExtension == "swift" {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"), words[..<index].allSatisfy({ $0.hasPrefix("@") || $0 == "package" }),
                    index + 1 < words.count
                else { continue }
                let name = String(words[index + 1])
                if ours.contains(name) { found.insert(name) }
            }
        }
        return found
    }

    /// The table of docs/architecture.md: module → the modules of ours it says it imports.
    static func documented() throws -> [String: Set<String>] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        var table: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 6, let name = cells[1].split(separator: "`").first.map(String.init) else { continue }
            table[name] = cells[3] == "—" ? [] : Set(cells[3].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        return table
    }

    /// Package.swift's target → the modules of ours it depends on.
    static func declared() throws -> [String: Set<String>] {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var targets: [String: Set<String>] = [:]
        for block in text.components(separatedBy: "name: \"").dropFirst() {
            guard let name = block.split(separator: "\"").first.map(String.init), folders[name] != nil else { continue }
            guard let start = block.range(of: "dependencies: [") else {
                // A target without dependencies (a product's `name:` comes first and is replaced).
                targets[name] = targets[name] ?? []
                continue
            }
            // Up to the end of that list: its closing bracket at the same depth.
            var depth = 1
            var end = start.upperBound
            while depth > 0, end < block.endIndex {
                if block[end] == "[" { depth += 1 } else if block[end] == "]" { depth -= 1 }
                end = block.index(after: end)
            }
            let list = block[start.upperBound..<end]
            let names = list.components(separatedBy: "\"").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            targets[name] = Set(names.filter { ours.contains($0) })
        }
        return targets
    }

    @Test func theTableListsExactlyWhatEachModuleImports() throws {
        let table = try Self.documented()
        for module in Self.folders.keys.sorted() where module != "CLibPQ" {
            let documented = try #require(table[module], "docs/architecture.md has no row for \(module)")
            let imported = try Self.imports(of: module)
            #expect(
                imported.subtracting(documented).isEmpty,
                "\(module) imports \(imported.subtracting(documented).sorted()) — add them to its row in docs/architecture.md")
            #expect(
                documented.subtracting(imported).isEmpty,
                "docs/architecture.md says \(module) imports \(documented.subtracting(imported).sorted()), and none of its files does")
        }
    }

    /// The layered picture at the top of docs/architecture.md: each row's modules, top first.
    /// A row is a line of the first code block with a module's name in its second column (text
    /// indented further continues a row's description); its modules are the names before the
    /// first wide gap, separated by "·".
    static func layers() throws -> [[String]] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let block = try #require(text.components(separatedBy: "```").dropFirst().first, "docs/architecture.md has no picture")
        return block.split(separator: "\n").compactMap { line -> [String]? in
            guard line.hasPrefix(" "), let first = line.dropFirst().first, first.isLetter else { return nil }
            let names = line.dropFirst().components(separatedBy: "   ").first ?? ""
            return names.split(separator: "·").map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    @Test func thePictureShowsEveryModuleOnceAndEveryImportGoesDown() throws {
        let layers = try Self.layers()
        var row: [String: Int] = [:]
        for (index, modules) in layers.enumerated() {
            for module in modules {
                #expect(row[module] == nil, "\(module) is shown twice in the picture of docs/architecture.md")
                row[module] = index
            }
        }
        let shown = Set(row.keys)
        let sources = Set(Self.folders.filter { $0.value.hasPrefix("Sources/") }.keys)
        #expect(sources.subtracting(shown).isEmpty, "the picture does not show \(sources.subtracting(shown).sorted())")
        #expect(shown.subtracting(sources).isEmpty, "the picture shows \(shown.subtracting(sources).sorted()), which are not modules")
        for module in sources.sorted() where module != "CLibPQ" {
            guard let own = row[module] else { continue }
            for imported in try Self.imports(of: module).sorted() {
                guard let theirs = row[imported] else { continue }
                #expect(theirs > own, "\(module) imports \(imported), which the picture does not show below it")
            }
        }
    }

    @Test func packageSwiftDeclaresEveryModuleAModuleImports() throws {
        let declared = try Self.declared()
        for module in Self.folders.keys.sorted() where module != "CLibPQ" {
            let dependencies = try #require(declared[module], "Package.swift has no target \(module) with dependencies")
            let imported = try Self.imports(of: module)
            #expect(
                imported.subtracting(dependencies).isEmpty,
                "\(module) imports \(imported.subtracting(dependencies).sorted()) without declaring them in Package.swift")
        }
    }

    /// The boundaries the design rests on: the edge never reaches storage, the recording path
    /// never the read side, the domain nothing but its formats.
    @Test func theHTTPEdgeAndTheRecordingPathKeepTheirDistance() throws {
        let http = try Self.imports(of: "LedgerHTTP")
        #expect(http.isDisjoint(with: ["LedgerPostgres", "LedgerEventStore", "LedgerSchema", "EmbeddedPostgres"]))
        for file in ["FactRecorder", "GroupRecorder", "EvidenceStore"] {
            let text = try String(contentsOf: Self.root.appendingPathComponent("Sources/LedgerIngestion/\(file).swift"), encoding: .utf8)
            #expect(!text.contains("import LedgerProjections"), "\(file) is on the recording path and must not import the read side")
        }
        #expect(try Self.imports(of: "LedgerCore").isSubset(of: ["LedgerFormats"]), "the domain is pure")
    }

    @Test func theReadmesLayoutNamesEveryModule() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        for folder in Self.folders.values where folder.hasPrefix("Sources/") {
            #expect(readme.contains("    \(folder) "), "README.md's layout does not list \(folder)")
        }
    }
}
