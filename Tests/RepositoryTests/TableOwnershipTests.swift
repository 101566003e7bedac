import Foundation
import Testing

/// Every table has one owner: the module whose job the table is writes the SQL that names it, and
/// every other module asks that owner (a method, or a statement it adds to its own round trip).
/// A table read by whoever needs it changes under a reader its owner does not know of.
/// docs/architecture.md's "Tables" section says who owns what and which uses by others are kept
/// on purpose; this test holds the sources to it, so a new stray statement is a decision someone
/// writes down.
@Suite struct TableOwnershipTests {
    static let root = ArchitectureTests.root

    /// The tables of `schema/*.sql` (and the migrator's own), a versioned family by its stem
    /// (`user_timelines_v` for `user_timelines_v1`, `_v2`, …).
    static func schemaTables() throws -> Set<String> {
        var tables: Set<String> = []
        let folder = root.appendingPathComponent("schema")
        var texts = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.map {
            try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)
        }
        texts.append(try String(contentsOf: root.appendingPathComponent("Sources/LedgerPostgres/Migrator.swift"), encoding: .utf8))
        let created = try Regex(#"CREATE (?:UNLOGGED )?(?:TABLE|(?:OR REPLACE )?VIEW) (?:IF NOT EXISTS )?ledger\.([a-z_][a-z0-9_]*)"#)
        // A versioned family is created through `format(…, '<stem>_v' || v)`.
        let versioned = try Regex(#"'([a-z_]+_v)' \|\|"#)
        for text in texts {
            for match in text.matches(of: created) { tables.insert(String(text[match.output[1].range!])) }
            for match in text.matches(of: versioned) { tables.insert(String(text[match.output[1].range!])) }
        }
        return tables
    }

    /// A name as the ownership rules count it: a versioned table by its family's stem.
    static func stem(_ name: String, in tables: Set<String>) -> String {
        if let range = name.range(of: #"_v[0-9]*$"#, options: .regularExpression), tables.contains(String(name[..<range.lowerBound]) + "_v")
        {
            return String(name[..<range.lowerBound]) + "_v"
        }
        return name
    }

    struct Section {
        /// table → its owning module.
        var owners: [String: String] = [:]
        /// module → the other modules' tables it names on purpose.
        var exceptions: [String: Set<String>] = [:]
        /// Tables listed twice.
        var repeated: [String] = []
    }

    /// docs/architecture.md's "Tables" section: rows `| `ledger.<table>`[, …] | `Owner` | … |`
    /// and, for the uses kept on purpose, `| `Module` | `ledger.<table>`, … | why |`.
    static func documented(tables: Set<String>) throws -> Section {
        let text = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let start = try #require(text.range(of: "\n## Tables\n"), "docs/architecture.md has no \"Tables\" section")
        let rest = text[start.upperBound...]
        let body = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        func names(_ cell: String) -> [String] {
            cell.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }
        }
        var section = Section()
        for line in body.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            if cells[1].hasPrefix("`ledger.") {
                let owner = cells[2].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
                for name in names(cells[1]) {
                    let table = stem(String(name.dropFirst("ledger.".count)).replacingOccurrences(of: "<n>", with: ""), in: tables)
                    if section.owners[table] != nil { section.repeated.append(table) }
                    section.owners[table] = owner
                }
            } else {
                let module = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
                for name in names(cells[2]) where name.hasPrefix("ledger.") {
                    section.exceptions[module, default: []].insert(stem(String(name.dropFirst("ledger.".count)), in: tables))
                }
            }
        }
        return section
    }

    /// Swift source without its comments (strings kept: SQL lives in them). Enough of Swift's
    /// lexicon for our sources: line and nested block comments, string literals single-line and
    /// multi-line, raw or not, with interpolations that may hold strings of their own.
    static func strippingComments(_ source: String) -> String {
        let characters = Array(source.unicodeScalars)
        var output = String.UnicodeScalarView()
        enum State {
            case code(parentheses: Int)
            case string(hashes: Int, multiline: Bool)
        }
        var stack: [State] = [.code(parentheses: 0)]
        var index = 0
        func at(_ offset: Int, _ text: String) -> Bool {
            let scalars = Array(text.unicodeScalars)
            guard index + offset + scalars.count <= characters.count else { return false }
            return Array(characters[(index + offset)..<(index + offset + scalars.count)]) == scalars
        }
        while index < characters.count {
            let character = characters[index]
            switch stack[stack.count - 1] {
            case .code(let parentheses):
                if at(0, "//") {
                    while index < characters.count, characters[index] != "\n" { index += 1 }
                    continue
                }
                if at(0, "/*") {
                    var depth = 0
                    repeat {
                        if at(0, "/*") {
                            depth += 1
                            index += 2
                        } else if at(0, "*/") {
                            depth -= 1
                            index += 2
                        } else {
                            if characters[index] == "\n" { output.append("\n") }
                            index += 1
                        }
                    } while depth > 0 && index < characters.count
                    continue
                }
                var hashes = 0
                while at(hashes, "#") { hashes += 1 }
                if at(hashes, "\"") {
                    let multiline = at(hashes, "\"\"\"")
                    let length = hashes + (multiline ? 3 : 1)
                    output.append(contentsOf: characters[index..<(index + length)])
                    index += length
                    stack.append(.string(hashes: hashes, multiline: multiline))
                    continue
                }
                if character == "(" {
                    stack[stack.count - 1] = .code(parentheses: parentheses + 1)
                } else if character == ")" {
                    if parentheses == 0, stack.count > 1 {
                        stack.removeLast()
                    } else {
                        stack[stack.count - 1] = .code(parentheses: max(0, parentheses - 1))
                    }
                }
                output.append(character)
                index += 1
            case .string(let hashes, let multiline):
                let close = (multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: hashes)
                let escape = "\\" + String(repeating: "#", count: hashes)
                if at(0, close) {
                    output.append(contentsOf: close.unicodeScalars)
                    index += close.unicodeScalars.count
                    stack.removeLast()
                } else if at(0, escape + "(") {
                    output.append(contentsOf: (escape + "(").unicodeScalars)
                    index += escape.unicodeScalars.count + 1
                    stack.append(.code(parentheses: 0))
                } else if at(0, escape) {
                    let length = escape.unicodeScalars.count + 1
                    output.append(contentsOf: characters[index..<min(index + length, characters.count)])
                    index += length
                } else {
                    output.append(character)
                    index += 1
                }
            }
        }
        return String(output)
    }

    struct Use: CustomStringConvertible {
        let module: String
        let file: String
        let line: Int
        let table: String
        var description: String { "\(file):\(line) (\(module)) names ledger.\(table)" }
    }

    /// Every `ledger.<table>` a module's Swift sources name outside comments. The running ledger
    /// is `Sources/`; the tools and the tests look at storage the way an operator does.
    static func uses(of tables: Set<String>) throws -> [Use] {
        let pattern = try Regex(#"ledger\.([a-z_][a-z0-9_]*)"#)
        var uses: [Use] = []
        for (module, folder) in ArchitectureTests.folders.sorted(by: { $0.key < $1.key }) where folder.hasPrefix("Sources/") {
            let directory = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            for file in files.sorted(by: { $0.path < $1.path }) where file.pathExtension == "swift" {
                let code = strippingComments(try String(contentsOf: file, encoding: .utf8))
                for (number, line) in code.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    for match in line.matches(of: pattern) {
                        let table = stem(String(line[match.output[1].range!]), in: tables)
                        guard tables.contains(table) else { continue }
                        let path = folder + file.path.dropFirst(directory.path.count)
                        uses.append(Use(module: module, file: path, line: number + 1, table: table))
                    }
                }
            }
        }
        return uses
    }

    @Test func everyTableOfTheSchemaHasOneDocumentedOwner() throws {
        let tables = try Self.schemaTables()
        #expect(tables.contains("events") && tables.contains("user_timelines_v"), "the schema's tables were not found: \(tables.sorted())")
        let section = try Self.documented(tables: tables)
        #expect(section.repeated.isEmpty, "docs/architecture.md lists \(section.repeated.sorted()) more than once")
        let undocumented = tables.subtracting(section.owners.keys)
        #expect(undocumented.isEmpty, "docs/architecture.md's Tables section names no owner for \(undocumented.sorted())")
        let unknown = Set(section.owners.keys).subtracting(tables)
        #expect(unknown.isEmpty, "docs/architecture.md's Tables section lists \(unknown.sorted()), which schema/ does not create")
        for (table, owner) in section.owners.sorted(by: { $0.key < $1.key }) {
            #expect(ArchitectureTests.folders[owner] != nil, "the owner of ledger.\(table), \(owner), is not a module")
        }
        for module in section.exceptions.keys.sorted() {
            #expect(ArchitectureTests.folders[module] != nil, "a kept exception names \(module), which is not a module")
        }
    }

    @Test func aModuleNamesOnlyItsOwnTablesOrAKeptException() throws {
        let tables = try Self.schemaTables()
        let section = try Self.documented(tables: tables)
        let uses = try Self.uses(of: tables)
        #expect(uses.count > 20, "found only \(uses.count) uses of the schema's tables: is the scan reading the sources?")
        for use in uses where section.owners[use.table] != nil && section.owners[use.table] != use.module {
            #expect(
                section.exceptions[use.module]?.contains(use.table) == true,
                "\(use): ledger.\(use.table) is \(section.owners[use.table]!)'s — ask it for the statement, or list the use in docs/architecture.md's Tables section with why"
            )
        }
        // A kept exception nothing uses any more is a stale line of the docs.
        for (module, named) in section.exceptions.sorted(by: { $0.key < $1.key }) {
            for table in named.sorted() {
                #expect(
                    uses.contains { $0.module == module && $0.table == table },
                    "docs/architecture.md keeps \(module)'s use of ledger.\(table), and \(module) names it nowhere")
            }
        }
    }

    @Test func commentsAreStrippedAndStringsKept() {
        let source = #"""
            // ledger.events in a comment
            let a = "ledger.streams" /* ledger.evidence /* nested */ still */ + "x // y"
            let b = "\(f("ledger.changes")) and ledger.webhooks"
            let c = #"raw \(x) "ledger.api_keys""#
            """#
        let stripped = Self.strippingComments(source)
        #expect(!stripped.contains("ledger.events"))
        #expect(!stripped.contains("ledger.evidence"))
        for kept in ["ledger.streams", "x // y", "ledger.changes", "ledger.webhooks", "ledger.api_keys"] {
            #expect(stripped.contains(kept), "\(kept) was stripped")
        }
        let lines = { (text: String) in text.split(separator: "\n", omittingEmptySubsequences: false).count }
        #expect(lines(stripped) == lines(source), "a line was lost: uses are reported by line")
    }
}
