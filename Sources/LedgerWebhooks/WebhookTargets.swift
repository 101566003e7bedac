import Foundation
import LedgerCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// Where webhooks may be sent. An admin key chooses a webhook's URL and the server then sends
/// requests there from inside the operator's network: without a rule, a URL naming the cloud
/// metadata service or an internal host turns the dispatcher into a way in (server-side request
/// forgery). Link-local and metadata addresses are refused always; loopback, private, unique-local
/// and carrier-grade NAT ranges unless the operator allows private networks (a ledger whose game
/// servers are on its own network, the tests, the local demo).
///
/// A URL is checked when it is defined and again before every delivery, on the addresses its name
/// resolves to then — a name that later resolves inside is caught — and the delivery connects to
/// the address that was checked (`WebhookDispatcher`), so a second resolution cannot differ.
package struct WebhookTargets: Sendable {
    package var allowPrivateNetworks: Bool

    package init(allowPrivateNetworks: Bool) {
        self.allowPrivateNetworks = allowPrivateNetworks
    }

    /// Why an address is refused, in the words an operator reads; nil when it is allowed.
    package func refusal(of address: IPAddress) -> String? {
        switch address.range {
        case .public: nil
        case .always(let why): "\(address) is \(why); webhooks are never sent there"
        case .privateNetwork(let why):
            allowPrivateNetworks ? nil : "\(address) is \(why); webhooks go there only when LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=1"
        }
    }

    /// The addresses a URL's host stands for, each allowed, or why not. A host that does not
    /// resolve is `unresolved` (the caller decides: a definition may name a host that is not up
    /// yet; a delivery cannot go anywhere).
    package enum Check: Sendable, Equatable {
        case allowed(host: String, addresses: [IPAddress])
        case refused(String)
        case unresolved(String)
    }

    package func check(url text: String) async -> Check {
        guard let url = URL(string: text), let host = url.host(percentEncoded: false), !host.isEmpty else {
            return .refused("the URL names no host")
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let literal = IPAddress(bare) {
            return refusal(of: literal).map(Check.refused) ?? .allowed(host: bare, addresses: [literal])
        }
        let addresses = await Self.resolve(bare)
        guard !addresses.isEmpty else { return .unresolved("\(bare) does not resolve") }
        // Every address must be allowed: a name with one public and one internal address would
        // otherwise reach inside whenever the connection picks the second.
        for address in addresses {
            if let refusal = refusal(of: address) { return .refused("\(bare) resolves to \(refusal)") }
        }
        return .allowed(host: bare, addresses: addresses)
    }

    /// The host's addresses: getaddrinfo, which blocks, on NIO's shared blocking-work pool (never
    /// on Swift's cooperative threads, and not a thread per delivery).
    static func resolve(_ host: String) async -> [IPAddress] {
        (try? await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
            defer { freeaddrinfo(first) }
            var found: [IPAddress] = []
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let current = entry {
                if let address = IPAddress(socketAddress: current.pointee.ai_addr), !found.contains(address) { found.append(address) }
                entry = current.pointee.ai_next
            }
            return found
        }) ?? []
    }
}

/// An IPv4 or IPv6 address, parsed by the C library (so every form it accepts is read the same
/// way the connection would read it) and classified by range.
package struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 or 16 bytes.
    package let bytes: [UInt8]

    package init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    init?(socketAddress: UnsafeMutablePointer<sockaddr>?) {
        guard let socketAddress else { return nil }
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            bytes = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin_addr
                return withUnsafeBytes(of: &address) { Array($0) }
            }
        case AF_INET6:
            bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin6_addr
                return withUnsafeBytes(of: &address) { Array($0) }
            }
        default:
            return nil
        }
    }

    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var copy = bytes
        _ = inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, &copy, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What kind of address it is, for `WebhookTargets`.
    package enum Range: Sendable, Equatable {
        case `public`
        /// Never a webhook's: the reason.
        case always(String)
        /// Inside a network: the reason.
        case privateNetwork(String)
    }

    package var range: Range {
        if bytes.count == 4 { return Self.range(v4: bytes) }
        // An IPv4 address written as IPv6 (::ffff:a.b.c.d, and NAT64's 64:ff9b::/96) is that address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Self.range(v4: Array(bytes[12...])) }
        if bytes[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return Self.range(v4: Array(bytes[12...])) }
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return .always("a link-local address (fe80::/10)") }
        if bytes == [0xFD, 0x00, 0x0E, 0xC2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54] {
            return .always("the cloud metadata service's address (fd00:ec2::254)")
        }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] <= 1 {
            return .privateNetwork(bytes[15] == 1 ? "a loopback address (::1)" : "the unspecified address (::)")
        }
        if bytes[0] & 0xFE == 0xFC { return .privateNetwork("a unique-local address (fc00::/7)") }
        return .public
    }

    private static func range(v4 b: [UInt8]) -> Range {
        switch (b[0], b[1]) {
        case (169, 254): return .always("a link-local address (169.254.0.0/16, where cloud metadata services answer)")
        case (100, 100) where b[2] == 100 && b[3] == 200: return .always("a cloud metadata service's address (100.100.100.200)")
        case (127, _): return .privateNetwork("a loopback address (127.0.0.0/8)")
        case (0, _): return .privateNetwork("an address of this host (0.0.0.0/8)")
        case (10, _): return .privateNetwork("a private address (10.0.0.0/8)")
        case (172, 16...31): return .privateNetwork("a private address (172.16.0.0/12)")
        case (192, 168): return .privateNetwork("a private address (192.168.0.0/16)")
        case (100, 64...127): return .privateNetwork("a carrier-grade NAT address (100.64.0.0/10)")
        default: return .public
        }
    }
}
