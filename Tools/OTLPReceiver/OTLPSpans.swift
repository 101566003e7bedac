/// One span as an OTLP exporter sent it, with the fields the tests look at.
package struct ReceivedSpan: Sendable {
    package var traceID: String
    package var spanID: String
    /// Empty for a trace's root.
    package var parentSpanID: String
    package var name: String
    /// OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    package var kind: Int
    package var attributes: [String: String]
    /// OTLP's StatusCode: 0 unset, 1 ok, 2 error.
    package var statusCode: Int
    /// The resource's `service.name`.
    package var service: String
}

/// `ExportTraceServiceRequest` (opentelemetry/proto/collector/trace/v1) decoded from protobuf.
enum OTLPTraces {
    static func decode(_ body: [UInt8]) throws -> [ReceivedSpan] {
        var request = ProtobufReader(body[...])
        var spans: [ReceivedSpan] = []
        while let (number, value) = try request.next() {
            guard number == 1, var resourceSpans = value.message else { continue } // resource_spans
            var service = ""
            var scoped: [ProtobufReader] = []
            while let (field, inner) = try resourceSpans.next() {
                if field == 1, var resource = inner.message { // resource
                    while let (attribute, pair) = try resource.next() {
                        if attribute == 1, let (key, text) = try keyValue(pair), key == "service.name" { service = text }
                    }
                } else if field == 2, let scope = inner.message { // scope_spans
                    scoped.append(scope)
                }
            }
            for var scope in scoped {
                while let (field, inner) = try scope.next() {
                    if field == 2, let span = inner.message { spans.append(try decodeSpan(span, service: service)) }
                }
            }
        }
        return spans
    }

    private static func decodeSpan(_ reader: ProtobufReader, service: String) throws -> ReceivedSpan {
        var reader = reader
        var span = ReceivedSpan(
            traceID: "", spanID: "", parentSpanID: "", name: "", kind: 0, attributes: [:], statusCode: 0, service: service)
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (1, _): span.traceID = value.hex ?? ""
            case (2, _): span.spanID = value.hex ?? ""
            case (4, _): span.parentSpanID = value.hex ?? ""
            case (5, _): span.name = value.string ?? ""
            case (6, .varint(let kind)): span.kind = Int(kind)
            case (9, _):
                if let (key, text) = try keyValue(value) { span.attributes[key] = text }
            case (15, _):
                guard var status = value.message else { continue }
                while let (statusField, code) = try status.next() {
                    if statusField == 3, case .varint(let number) = code { span.statusCode = Int(number) }
                }
            default: continue
            }
        }
        return span
    }

    /// A `KeyValue`, its value written as text (arrays as their elements joined by ",").
    private static func keyValue(_ field: ProtobufReader.Field) throws -> (String, String)? {
        guard var pair = field.message else { return nil }
        var key = "", text = ""
        while let (number, value) = try pair.next() {
            if number == 1 { key = value.string ?? "" }
            if number == 2 { text = try anyValue(value) }
        }
        return (key, text)
    }

    private static func anyValue(_ field: ProtobufReader.Field) throws -> String {
        guard var value = field.message else { return "" }
        while let (number, inner) = try value.next() {
            switch (number, inner) {
            case (1, _): return inner.string ?? ""
            case (2, .varint(let flag)): return flag == 0 ? "false" : "true"
            case (3, .varint(let number)): return String(Int64(bitPattern: number))
            case (4, .fixed64(let bits)): return String(Double(bitPattern: bits))
            case (5, _):
                guard var array = inner.message else { return "" }
                var elements: [String] = []
                while let (element, item) = try array.next() {
                    if element == 1 { elements.append(try anyValue(item)) }
                }
                return elements.joined(separator: ",")
            default: continue
            }
        }
        return ""
    }
}
