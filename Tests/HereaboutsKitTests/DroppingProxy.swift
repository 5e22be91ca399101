import EdgeFixtures
import Foundation

/// A TCP proxy in front of the edge that loses answers the way a phone on a train
/// does: the first `times` requests whose first line starts with `prefix` reach the
/// server and are applied, and the connection is cut one byte into the answer's
/// body, so the client never learns what happened.
///
/// Where the cut falls matters. An HTTP client may resend a request by itself on a
/// reused connection that closed before any byte of an answer (libcurl does), and
/// the retry under test would then be the library's, not the kit's. And a cut inside
/// the answer's head crashes FoundationNetworking on Linux ("Transfer completed, but
/// there's no response", swift-corelibs-foundation #5285) before the kit can see it.
final class DroppingProxy: Sendable {
    private let proxy: TCPProxy
    private let drops: Drops

    var port: Int { proxy.port }

    /// How many answers were cut off so far.
    var dropped: Int { drops.dropped }

    init(upstream: Int, dropping prefix: String, times: Int) throws {
        let drops = Drops(left: times)
        let prefix = Array(prefix.utf8)
        self.drops = drops
        proxy = try TCPProxy(upstream: upstream) {
            // Requests on one connection go one at a time, so a request seen going up
            // owns the next answer coming down.
            let cutNextAnswer = Flag(), headersSent = Flag()
            let up: TCPProxy.Hook = { chunk in
                if chunk.starts(with: prefix), drops.take() { cutNextAnswer.set() }
                return (chunk, false)
            }
            let down: TCPProxy.Hook = { chunk in
                guard cutNextAnswer.isSet else { return (chunk, false) }
                if headersSent.isSet { return (Array(chunk.prefix(1)), true) }
                guard let end = chunk.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound else { return (chunk, false) }
                headersSent.set()
                // The answer's head and one byte of its body: the client knows the
                // status, and that the answer broke off.
                let cut = min(chunk.count, end + 1)
                return (Array(chunk[..<cut]), cut > end)
            }
            return (up, down)
        }
    }

    func stop() { proxy.stop() }

    /// The drops left to make, and those made.
    private final class Drops: @unchecked Sendable {
        private let lock = NSLock()
        private var left: Int
        private var made = 0

        init(left: Int) { self.left = left }

        var dropped: Int { lock.withLock { made } }

        func take() -> Bool {
            lock.withLock {
                guard left > 0 else { return false }
                left -= 1
                made += 1
                return true
            }
        }
    }

    /// A flag one thread sets and another reads.
    private final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }
}
