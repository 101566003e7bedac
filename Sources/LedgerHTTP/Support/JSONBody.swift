import Foundation
import Hummingbird
import LedgerCore
import LedgerFormats
import NIOCore

/// Reading request bodies with the size limit and clear errors, and writing JSON answers.
enum JSONBody {
    /// No key strategies: wire types spell their snake_case keys themselves, so that map keys
    /// (entitlement names, currencies) pass through untouched.
    static let decoder = JSONDecoder()

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The raw body, refused with 413 beyond the limit.
    static func bytes(_ request: Request, context: LedgerRequestContext) async throws -> Data {
        do {
            return Data(try await request.body.collect(upTo: context.maxUploadSize).readableBytesView)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw LedgerError(.bodyTooLarge, "the body is over \(context.maxUploadSize) bytes")
        } catch is NIOTooManyBytesError {
            throw LedgerError(.bodyTooLarge, "the body is over \(context.maxUploadSize) bytes")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from request: Request, context: LedgerRequestContext) async throws -> T {
        let data = try await bytes(request, context: context)
        // The ledger's own parser: JSONSerialization building a Foundation tree of a 4 KB JWS body
        // just to see an object showed in the ingestion profile.
        guard let tree = try? JSONTree.parse(data), case .object = tree else {
            throw LedgerError(.malformedJSON, "the body must be a JSON object")
        }
        // Decoded from that tree (bodies hold strings, numbers and lists: no dates, whose
        // representation differs between the two decoders); JSONDecoder parsed the body a second
        // time (1 % of ingestion's CPU). A body that does not decode goes through
        // JSONDecoder again for its error, which names the path of the field at fault.
        if let value = try? StorageDecoder.decode(type, from: tree) { return value }
        do {
            return try decoder.decode(type, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw LedgerError(.invalidBody, "\(key.stringValue) is required")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw LedgerError(.invalidBody, "\(path(context)) has the wrong type")
        } catch let DecodingError.dataCorrupted(context) {
            throw LedgerError(.invalidBody, "\(path(context)): \(context.debugDescription)")
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }

    static func response(bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try encoder.encode(value)
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
