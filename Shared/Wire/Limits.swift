import Foundation
import Synchronization

/// The size limits of the protocol.
public enum Limits {
    /// The frames of one request (frame 0 and its attachments); a message with more is
    /// refused before the rest is read.
    public static let requestFrames = 16
    /// Frame 0 of a request, unless its op allows more.
    public static let requestFrame0Bytes = 256 * 1024
    /// Frame 0 of `catalogue.posts.import`.
    public static let importFrame0Bytes = 1024 * 1024
    /// All frames of one message; also every socket's `ZMQ_MAXMSGSIZE`, past which a
    /// peer is disconnected without a reply.
    public static let messageBytes = 8 * 1024 * 1024
    /// A list op stops a page early to keep its reply under this.
    public static let replyPageBytes = 1024 * 1024
    /// Avatars and post images.
    public static let imageBytes = 5 * 1024 * 1024
    public static let imagePixels = 40_000_000
    /// `q` in searches.
    public static let queryCharacters = 200
}

/// Request ids and the opaque ids of users, posts and the rest.
public enum Identifier {
    /// A request `id`: 1–64 characters of `[A-Za-z0-9_-]`.
    public static func isValidRequestID(_ id: String) -> Bool {
        isValid(id, maxLength: 64)
    }

    /// An entity id: 1–40 characters of `[A-Za-z0-9_-]`.
    public static func isValidEntityID(_ id: String) -> Bool {
        isValid(id, maxLength: 40)
    }

    private static func isValid(_ id: String, maxLength: Int) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
        return utf8.allSatisfy(isIDByte)
    }

    public static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// A new random id: `count` characters of the id alphabet (6 bits each), from the
    /// system's secure random source. 22 characters carry 132 bits. For secrets
    /// (refresh tokens); entity and request ids use `sortable()`.
    public static func random(count: Int = 22) -> String {
        String(decoding: randomDigits(count).map { alphabet[Int($0)] }, as: UTF8.self)
    }

    /// `count` random numbers of 0–63 from the system's secure source, eight per draw
    /// (each draw is a system call).
    private static func randomDigits(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bits: UInt64 = 0
        return (0..<count).map { index in
            if index % 8 == 0 { bits = generator.next() }
            defer { bits >>= 8 }
            return UInt8(bits & 63)
        }
    }

    /// A new id that sorts by creation time: 8 characters of milliseconds since
    /// 1970, then 14 random characters (84 bits). Rows keyed by such ids append to
    /// their indexes instead of landing on a random page, which is what makes a
    /// small write transaction cost most. The creation time they reveal is public
    /// anyway (`createdAt`).
    ///
    /// Within a process each id sorts after the one before, also in the same
    /// millisecond (its random part is the previous one's plus one) or with the clock
    /// set back (it keeps the previous millisecond): "the later of two posts made in
    /// the same second comes first" holds however fast they come.
    public static func sortable(at date: Date = Date()) -> String {
        lastSortable.withLock { $0.next(at: date) }
    }

    /// The sequence behind `sortable()`, one per process.
    private static let lastSortable = Mutex(SortableSequence())

    /// Ids that sort in the order they were made: it remembers the millisecond and
    /// random part of the last one (digits 0–63).
    struct SortableSequence {
        private var millis: UInt64 = 0
        private var tail: [UInt8] = []

        mutating func next(at date: Date) -> String {
            let now = UInt64(max(0, date.timeIntervalSince1970 * 1000))
            if now > millis || tail.isEmpty {
                tail = randomDigits(14)
                millis = max(now, millis)
            } else {
                // The next number after the last, in base 64 (a carry past the top
                // would need 2^84 ids in one millisecond).
                var index = tail.count - 1
                while index >= 0 {
                    if tail[index] < 63 { tail[index] += 1; break }
                    tail[index] = 0
                    index -= 1
                }
            }
            var bytes = [UInt8](repeating: 0, count: 22)
            var rest = millis
            for index in stride(from: 7, through: 1, by: -1) {
                bytes[index] = sortableAlphabet[Int(rest & 63)]
                rest >>= 6
            }
            // The top 6 bits stay 0 until 2109; the first character skips '-', so that an
            // id never looks like a command-line option.
            bytes[0] = sortableAlphabet[Int(min(rest, 62)) + 1]
            for (offset, digit) in tail.enumerated() { bytes[8 + offset] = sortableAlphabet[Int(digit)] }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// The same characters in ASCII order, so that text order is number order.
    private static let sortableAlphabet: [UInt8] = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)
}
