import Testing
import Wire

@Suite("Whom per-address budgets count")
struct ClientAddressTests {
    @Test("IPv4 as it is; IPv6 by its /64, however it is written; IPv4 written as IPv6 as IPv4; anything else as it is", arguments: [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:0db8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("2001:db8:1:2::", "2001:db8:1:2::/64"),
        ("::1", "::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("fe80::1%eth0", "fe80::1%eth0"),
        ("key:abc", "key:abc"),
        ("local", "local"),
        ("not:an:address", "not:an:address"),
    ])
    func keys(address: String, key: String) {
        #expect(ClientAddress.budgetKey(address) == key)
    }

    @Test("two addresses of one /64 share a key; neighbouring /64s do not")
    func sameNetwork() {
        #expect(ClientAddress.budgetKey("2001:db8:aa:bb::1") == ClientAddress.budgetKey("2001:db8:aa:bb:ffff::9"))
        #expect(ClientAddress.budgetKey("2001:db8:aa:bb::1") != ClientAddress.budgetKey("2001:db8:aa:bc::1"))
    }
}
