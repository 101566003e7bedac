/// Rows in COPY's text format, written straight into bytes: a rebuild writes a million fields,
/// and going through `String` for each (escaping by `replacingOccurrences`) cost more than
/// computing them.
struct CopyTextWriter {
    private(set) var bytes: [UInt8] = []
    private var fieldsInRow = 0

    /// One row: the fields `body` writes, tab-separated, then a newline.
    mutating func row(_ body: (inout CopyTextWriter) -> Void) {
        fieldsInRow = 0
        body(&self)
        bytes.append(UInt8(ascii: "\n"))
    }

    mutating func field(_ text: String?) {
        guard var text else { return null() }
        separate()
        text.withUTF8 { escape($0) }
    }

    mutating func field(_ number: Int64?) {
        guard let number else { return null() }
        separate()
        bytes += String(number).utf8
    }

    /// Text already in bytes (a JSON document), escaped for COPY.
    mutating func field(bytes text: [UInt8]) {
        separate()
        text.withUnsafeBufferPointer { escape($0) }
    }

    private mutating func null() {
        separate()
        bytes += #"\N"#.utf8
    }

    private mutating func separate() {
        if fieldsInRow > 0 { bytes.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
    }

    /// Backslash, tab, newline and carriage return are the bytes COPY's text format escapes.
    private mutating func escape(_ text: UnsafeBufferPointer<UInt8>) {
        var start = 0
        for (index, byte) in text.enumerated() {
            let escaped: UInt8
            switch byte {
            case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
            case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
            case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
            default: continue
            }
            bytes += UnsafeBufferPointer(rebasing: text[start..<index])
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(escaped)
            start = index + 1
        }
        bytes += UnsafeBufferPointer(rebasing: text[start...])
    }
}
