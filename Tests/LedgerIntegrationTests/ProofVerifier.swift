import Crypto
import Foundation

/// An auditor's verifier, written from RFC 9162 (sections 2.1.3.2 and 2.1.4.2) and docs/proofs.md
/// alone, sharing no code with the ledger's tree: what the tests check the ledger's proofs with.
enum ProofVerifier {
    static func sha256(_ parts: [UInt8]...) -> [UInt8] {
        var hasher = SHA256()
        for part in parts { hasher.update(data: part) }
        return Array(hasher.finalize())
    }

    /// The leaf hash docs/proofs.md defines: SHA-256(0x00 ‖ i64 position ‖ commitment).
    static func leafHash(position: Int64, commitment: [UInt8]) -> [UInt8] {
        sha256([0x00], withUnsafeBytes(of: position.bigEndian) { Array($0) }, commitment)
    }

    /// MTH over a list of leaf hashes, by the RFC's recursive definition.
    static func root(_ leaves: [[UInt8]]) -> [UInt8] {
        if leaves.isEmpty { return sha256([]) }
        if leaves.count == 1 { return leaves[0] }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        return sha256([0x01], root(Array(leaves[..<k])), root(Array(leaves[k...])))
    }

    /// RFC 9162 2.1.3.2: verifying an inclusion proof.
    static func verifyInclusion(leafIndex: Int64, treeSize: Int64, leafHash: [UInt8], path: [[UInt8]], root: [UInt8]) -> Bool {
        guard leafIndex < treeSize else { return false }
        var fn = leafIndex
        var sn = treeSize - 1
        var r = leafHash
        for p in path {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                r = sha256([0x01], p, r)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                r = sha256([0x01], r, p)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 && r == root
    }

    /// RFC 9162 2.1.4.2: verifying a consistency proof.
    static func verifyConsistency(first: Int64, second: Int64, firstRoot: [UInt8], secondRoot: [UInt8], proof: [[UInt8]]) -> Bool {
        if first == second { return proof.isEmpty && firstRoot == secondRoot }
        guard first > 0, first < second, !proof.isEmpty else { return false }
        var path = proof
        if first & (first - 1) == 0 { path.insert(firstRoot, at: 0) }
        var fn = first - 1
        var sn = second - 1
        while fn & 1 == 1 {
            fn >>= 1
            sn >>= 1
        }
        var fr = path[0]
        var sr = path[0]
        for c in path.dropFirst() {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                fr = sha256([0x01], c, fr)
                sr = sha256([0x01], c, sr)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                sr = sha256([0x01], sr, c)
            }
            fn >>= 1
            sn >>= 1
        }
        return fr == firstRoot && sr == secondRoot && sn == 0
    }

    /// A compact JWS (ES256) checked against a JWK Set's P-256 keys by `kid`; its payload.
    static func verifyJWS(_ jws: String, keySet: [String: Any]) -> [String: Any]? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        func decode(_ text: String) -> Data? {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return Data(base64Encoded: base64)
        }
        guard parts.count == 3, let header = decode(parts[0]).flatMap({ try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }),
            header["alg"] as? String == "ES256", let kid = header["kid"] as? String,
            let jwk = (keySet["keys"] as? [[String: Any]])?.first(where: { $0["kid"] as? String == kid }),
            let x = (jwk["x"] as? String).flatMap(decode), let y = (jwk["y"] as? String).flatMap(decode),
            let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + x + y),
            let signature = decode(parts[2]).flatMap({ try? P256.Signing.ECDSASignature(rawRepresentation: $0) }),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return nil }
        return decode(parts[1]).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }
}
