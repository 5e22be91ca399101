#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whom per-address budgets count a client as: the edge's requests per second and
/// sockets, and the services' wrong passwords, account creation and lookups.
public enum ClientAddress {
    /// The key an address is counted under. IPv4 as it is. IPv6 by its /64
    /// (`2001:db8:1:2::/64`): one host, or one customer of a provider, holds a whole
    /// /64 and can send from a new address in it for every request. An IPv4 address
    /// written as IPv6 (`::ffff:192.0.2.1`) as the IPv4 address. Anything that is not
    /// an IP address (a key, `local`) is its own key.
    public static func budgetKey(_ address: String) -> String {
        guard address.contains(":") else { return address }
        var bytes = in6_addr()
        let parsed = address.withCString { inet_pton(AF_INET6, $0, &bytes) }
        guard parsed == 1 else { return address }
        return withUnsafeMutableBytes(of: &bytes) { raw -> String in
            let octets = raw.bindMemory(to: UInt8.self)
            if octets[0..<10].allSatisfy({ $0 == 0 }), octets[10] == 0xFF, octets[11] == 0xFF {
                return "\(octets[12]).\(octets[13]).\(octets[14]).\(octets[15])"
            }
            for index in 8..<16 { octets[index] = 0 }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, raw.baseAddress, &text, socklen_t(text.count)) != nil else { return address }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
        }
    }
}
