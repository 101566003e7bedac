/// Protocol Buffers' wire format, read field by field: what an OTLP request needs and nothing
/// more (no schema, no code generation). Unknown fields are skipped, as protobuf readers must.
struct ProtobufReader {
    enum Field {
        case varint(UInt64)
        case fixed64(UInt64)
        case bytes(ArraySlice<UInt8>)
        case fixed32(UInt32)
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    /// The next field's number and value, or nil at the end.
    mutating func next() throws -> (number: Int, value: Field)? {
        guard !bytes.isEmpty else { return nil }
        let tag = try varint()
        let number = Int(tag >> 3)
        switch tag & 7 {
        case 0: return (number, .varint(try varint()))
        case 1: return (number, .fixed64(try fixed(8)))
        case 2:
            let length = Int(try varint())
            guard length <= bytes.count else { throw Malformed(description: "field \(number) runs past the end") }
            defer { bytes = bytes.dropFirst(length) }
            return (number, .bytes(bytes.prefix(length)))
        case 5: return (number, .fixed32(UInt32(try fixed(4))))
        default: throw Malformed(description: "wire type \(tag & 7) of field \(number) is not one protobuf has")
        }
    }

    private mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while let byte = bytes.first {
            bytes = bytes.dropFirst()
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
            guard shift < 64 else { break }
        }
        throw Malformed(description: "a varint runs past the end")
    }

    private mutating func fixed(_ count: Int) throws -> UInt64 {
        guard bytes.count >= count else { throw Malformed(description: "a fixed-size field runs past the end") }
        var value: UInt64 = 0
        for (index, byte) in bytes.prefix(count).enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
        bytes = bytes.dropFirst(count)
        return value
    }
}

extension ProtobufReader.Field {
    var message: ProtobufReader? {
        if case .bytes(let bytes) = self { return ProtobufReader(bytes) }
        return nil
    }

    var string: String? {
        if case .bytes(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    var hex: String? {
        guard case .bytes(let bytes) = self else { return nil }
        return bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
