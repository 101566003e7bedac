import LedgerWebhooks
import Testing

/// Which addresses webhooks may reach: never link-local or metadata addresses, and private ones
/// only when the operator allows them — however the address is written.
@Suite struct WebhookTargetsTests {
    static let closed = WebhookTargets(allowPrivateNetworks: false)
    static let open = WebhookTargets(allowPrivateNetworks: true)

    func refusal(_ text: String, _ targets: WebhookTargets = closed) throws -> String? {
        targets.refusal(of: try #require(IPAddress(text), "\(text) is an address"))
    }

    @Test func linkLocalAndMetadataAddressesAreRefusedAlways() throws {
        for address in [
            "169.254.169.254", "169.254.0.1", "100.100.100.200", "fe80::1", "febf::1", "fd00:ec2::254", "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            #expect(try refusal(address, Self.open)?.contains("never sent there") == true, "\(address)")
        }
    }

    @Test func privateRangesAreRefusedUnlessAllowed() throws {
        for address in [
            "127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.254",
            "0.0.0.0", "::1", "::", "fc00::1", "fd12:3456::1", "::ffff:10.0.0.1",
        ] {
            #expect(try refusal(address)?.contains("LEDGER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=1") == true, "\(address)")
            #expect(try refusal(address, Self.open) == nil, "\(address) is allowed with private networks")
        }
    }

    @Test func publicAddressesAreAllowed() throws {
        for address in [
            "8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255", "169.253.1.1", "2001:4860:4860::8888",
            "fec0::1", "fe00::1",
        ] {
            #expect(try refusal(address) == nil, "\(address)")
        }
    }

    @Test func aURLIsCheckedOnWhatItsHostResolvesTo() async {
        #expect(
            await Self.closed.check(url: "http://169.254.169.254/latest/meta-data/")
                == .refused(
                    "169.254.169.254 is a link-local address (169.254.0.0/16, where cloud metadata services answer); webhooks are never sent there"
                ))
        guard case .refused(let bracketed) = await Self.open.check(url: "http://[fd00:ec2::254]/") else {
            Issue.record("the IPv6 metadata address was not refused")
            return
        }
        #expect(bracketed.hasPrefix("fd00:ec2::254 is"))
        // localhost comes from the hosts file: a name resolved like any other.
        guard case .refused(let named) = await Self.closed.check(url: "http://localhost:8080/hook") else {
            Issue.record("a name resolving to loopback was not refused")
            return
        }
        #expect(named.hasPrefix("localhost resolves to "), "\(named)")
        guard case .allowed(let host, let addresses) = await Self.open.check(url: "http://localhost:8080/hook") else {
            Issue.record("loopback with private networks allowed was refused")
            return
        }
        #expect(host == "localhost" && !addresses.isEmpty)
        #expect(await Self.closed.check(url: "http://no-such-host.invalid/") == .unresolved("no-such-host.invalid does not resolve"))
        #expect(
            await Self.closed.check(url: "http:///nohost?token=s3cret") == .refused("the URL names no host"),
            "a URL, which may carry a token, is never echoed")
    }
}
