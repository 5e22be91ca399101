import Crypto
import Foundation

/// NaCl's `crypto_box` and `crypto_secretbox` (X25519, XSalsa20, Poly1305), which
/// CurveZMQ (ZeroMQ RFC 26) seals every command and message with. swift-crypto has
/// X25519 but neither XSalsa20 nor a Poly1305 of its own, so those two are here,
/// written from the NaCl papers; the tests check them against libzmq's CURVE, which
/// seals with libsodium.
struct SecretBox {
    /// The box's key: for `crypto_box`, HSalsa20 of the X25519 secret shared by the two keys.
    let key: [UInt8]

    static let tagBytes = 16

    /// `crypto_box_beforenm`: the key a sender with `secretKey` shares with `publicKey`.
    init(publicKey: [UInt8], secretKey: [UInt8]) throws {
        let shared = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: secretKey)
            .sharedSecretFromKeyAgreement(with: Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey))
        key = Salsa20.hsalsa20(key: shared.withUnsafeBytes { Array($0) }, nonce: [UInt8](repeating: 0, count: 16))
    }

    /// Tag then ciphertext (NaCl's box without its 16 leading zero bytes).
    func seal(_ plaintext: some Collection<UInt8>, nonce: [UInt8]) -> [UInt8] {
        var stream = Salsa20.XStream(key: key, nonce: nonce)
        let polyKey = stream.next(32)
        var ciphertext = Array(plaintext)
        stream.xor(&ciphertext)
        return Poly1305.tag(ciphertext, key: polyKey) + ciphertext
    }

    /// The plaintext, or nil when the tag does not match (a forged or damaged box).
    func open(_ box: some Collection<UInt8>, nonce: [UInt8]) -> [UInt8]? {
        let box = Array(box)
        guard box.count >= Self.tagBytes else { return nil }
        var stream = Salsa20.XStream(key: key, nonce: nonce)
        let polyKey = stream.next(32)
        var text = Array(box[Self.tagBytes...])
        let expected = Poly1305.tag(text, key: polyKey)
        // In constant time: the difference of every byte, or'ed.
        guard zip(expected, box[0..<Self.tagBytes]).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else { return nil }
        stream.xor(&text)
        return text
    }
}

enum Salsa20 {
    private static let sigma: [UInt32] = [0x6170_7865, 0x3320_646E, 0x7962_2D32, 0x6B20_6574]

    @inline(__always)
    private static func rotl(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value << count) | (value >> (32 - count))
    }

    /// Salsa20's 20 rounds (10 double rounds) over `x`, in place.
    private static func rounds(_ x: inout (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
                                           UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)) {
        for _ in 0..<10 {
            // Columns.
            x.4 ^= rotl(x.0 &+ x.12, 7); x.8 ^= rotl(x.4 &+ x.0, 9); x.12 ^= rotl(x.8 &+ x.4, 13); x.0 ^= rotl(x.12 &+ x.8, 18)
            x.9 ^= rotl(x.5 &+ x.1, 7); x.13 ^= rotl(x.9 &+ x.5, 9); x.1 ^= rotl(x.13 &+ x.9, 13); x.5 ^= rotl(x.1 &+ x.13, 18)
            x.14 ^= rotl(x.10 &+ x.6, 7); x.2 ^= rotl(x.14 &+ x.10, 9); x.6 ^= rotl(x.2 &+ x.14, 13); x.10 ^= rotl(x.6 &+ x.2, 18)
            x.3 ^= rotl(x.15 &+ x.11, 7); x.7 ^= rotl(x.3 &+ x.15, 9); x.11 ^= rotl(x.7 &+ x.3, 13); x.15 ^= rotl(x.11 &+ x.7, 18)
            // Rows.
            x.1 ^= rotl(x.0 &+ x.3, 7); x.2 ^= rotl(x.1 &+ x.0, 9); x.3 ^= rotl(x.2 &+ x.1, 13); x.0 ^= rotl(x.3 &+ x.2, 18)
            x.6 ^= rotl(x.5 &+ x.4, 7); x.7 ^= rotl(x.6 &+ x.5, 9); x.4 ^= rotl(x.7 &+ x.6, 13); x.5 ^= rotl(x.4 &+ x.7, 18)
            x.11 ^= rotl(x.10 &+ x.9, 7); x.8 ^= rotl(x.11 &+ x.10, 9); x.9 ^= rotl(x.8 &+ x.11, 13); x.10 ^= rotl(x.9 &+ x.8, 18)
            x.12 ^= rotl(x.15 &+ x.14, 7); x.13 ^= rotl(x.12 &+ x.15, 9); x.14 ^= rotl(x.13 &+ x.12, 13); x.15 ^= rotl(x.14 &+ x.13, 18)
        }
    }

    private static func words(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> [UInt32] {
        (0..<count).map { index in
            let base = offset + index * 4
            return UInt32(bytes[base]) | UInt32(bytes[base + 1]) << 8 | UInt32(bytes[base + 2]) << 16 | UInt32(bytes[base + 3]) << 24
        }
    }

    /// The input block: constants, key, and the 16 bytes between (nonce and counter, or HSalsa20's nonce).
    private static func block(key: [UInt32], middle: [UInt32])
        -> (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
            UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) {
        (sigma[0], key[0], key[1], key[2], key[3], sigma[1], middle[0], middle[1],
         middle[2], middle[3], sigma[2], key[4], key[5], key[6], key[7], sigma[3])
    }

    private static func littleEndian(_ values: [UInt32]) -> [UInt8] {
        values.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8),
                          UInt8(truncatingIfNeeded: $0 >> 16), UInt8(truncatingIfNeeded: $0 >> 24)] }
    }

    /// HSalsa20: a 32-byte key from a key and a 16-byte nonce.
    static func hsalsa20(key: [UInt8], nonce: [UInt8]) -> [UInt8] {
        var x = block(key: words(key, 0, 8), middle: words(nonce, 0, 4))
        rounds(&x)
        return littleEndian([x.0, x.5, x.10, x.15, x.6, x.7, x.8, x.9])
    }

    /// XSalsa20's key stream for a 32-byte key and a 24-byte nonce.
    struct XStream {
        private let key: [UInt32]
        private let nonce: (UInt32, UInt32)
        private var counter: UInt64 = 0
        /// The current block of the stream, and how much of it is used.
        private var buffered = [UInt8](repeating: 0, count: 64)
        private var used = 64

        init(key: [UInt8], nonce: [UInt8]) {
            self.key = Salsa20.words(Salsa20.hsalsa20(key: key, nonce: Array(nonce[0..<16])), 0, 8)
            let tail = Salsa20.words(Array(nonce[16..<24]), 0, 2)
            self.nonce = (tail[0], tail[1])
        }

        private mutating func refill() {
            let input = Salsa20.block(key: key, middle: [nonce.0, nonce.1, UInt32(truncatingIfNeeded: counter),
                                                          UInt32(truncatingIfNeeded: counter >> 32)])
            var x = input
            Salsa20.rounds(&x)
            let words = (x.0 &+ input.0, x.1 &+ input.1, x.2 &+ input.2, x.3 &+ input.3, x.4 &+ input.4, x.5 &+ input.5,
                         x.6 &+ input.6, x.7 &+ input.7, x.8 &+ input.8, x.9 &+ input.9, x.10 &+ input.10, x.11 &+ input.11,
                         x.12 &+ input.12, x.13 &+ input.13, x.14 &+ input.14, x.15 &+ input.15)
            withUnsafeBytes(of: words) { raw in
                buffered.withUnsafeMutableBytes { block in
                    for index in 0..<16 {
                        block.storeBytes(of: raw.load(fromByteOffset: index * 4, as: UInt32.self).littleEndian,
                                         toByteOffset: index * 4, as: UInt32.self)
                    }
                }
            }
            used = 0
            counter &+= 1
        }

        mutating func next(_ count: Int) -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(count)
            while out.count < count {
                if used == buffered.count { refill() }
                let take = min(count - out.count, buffered.count - used)
                out += buffered[used..<(used + take)]
                used += take
            }
            return out
        }

        mutating func xor(_ bytes: inout [UInt8]) {
            var index = 0
            let count = bytes.count
            while index < count {
                if used == 64 { refill() }
                let take = min(count - index, 64 - used)
                let start = used
                bytes.withUnsafeMutableBufferPointer { out in
                    buffered.withUnsafeBufferPointer { stream in
                        for offset in 0..<take { out[index + offset] ^= stream[start + offset] }
                    }
                }
                used += take
                index += take
            }
        }
    }
}

/// Poly1305 (D. J. Bernstein), with 26-bit limbs as in poly1305-donna.
enum Poly1305 {
    static func tag(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        func word(_ bytes: [UInt8], _ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        let mask: UInt32 = 0x3FF_FFFF
        let r0 = word(key, 0) & 0x3FF_FFFF
        let r1 = (word(key, 3) >> 2) & 0x3FF_FF03
        let r2 = (word(key, 6) >> 4) & 0x3FF_C0FF
        let r3 = (word(key, 9) >> 6) & 0x3F0_3FFF
        let r4 = (word(key, 12) >> 8) & 0x00F_FFFF
        let s1 = UInt64(r1 * 5), s2 = UInt64(r2 * 5), s3 = UInt64(r3 * 5), s4 = UInt64(r4 * 5)
        var h0: UInt32 = 0, h1: UInt32 = 0, h2: UInt32 = 0, h3: UInt32 = 0, h4: UInt32 = 0
        var offset = 0
        // The last block, when short: its bytes, then 1, then zeros (and no 2^128 bit).
        var last = [UInt8](repeating: 0, count: 16)
        while offset < message.count {
            let count = min(16, message.count - offset)
            let hibit: UInt32 = count == 16 ? 1 << 24 : 0
            if count < 16 {
                for index in 0..<count { last[index] = message[offset + index] }
                last[count] = 1
            }
            let (b0, b1, b2, b3) = (count == 16 ? message : last).withUnsafeBytes { raw in
                let base = count == 16 ? offset : 0
                return (raw.loadUnaligned(fromByteOffset: base, as: UInt32.self).littleEndian,
                        raw.loadUnaligned(fromByteOffset: base + 4, as: UInt32.self).littleEndian,
                        raw.loadUnaligned(fromByteOffset: base + 8, as: UInt32.self).littleEndian,
                        raw.loadUnaligned(fromByteOffset: base + 12, as: UInt32.self).littleEndian)
            }
            h0 &+= b0 & mask
            h1 &+= ((b0 >> 26) | (b1 << 6)) & mask
            h2 &+= ((b1 >> 20) | (b2 << 12)) & mask
            h3 &+= ((b2 >> 14) | (b3 << 18)) & mask
            h4 &+= (b3 >> 8) | hibit
            let (a0, a1, a2, a3, a4) = (UInt64(h0), UInt64(h1), UInt64(h2), UInt64(h3), UInt64(h4))
            let d0 = a0 * UInt64(r0) + a1 * s4 + a2 * s3 + a3 * s2 + a4 * s1
            var d1 = a0 * UInt64(r1) + a1 * UInt64(r0) + a2 * s4 + a3 * s3 + a4 * s2
            var d2 = a0 * UInt64(r2) + a1 * UInt64(r1) + a2 * UInt64(r0) + a3 * s4 + a4 * s3
            var d3 = a0 * UInt64(r3) + a1 * UInt64(r2) + a2 * UInt64(r1) + a3 * UInt64(r0) + a4 * s4
            var d4 = a0 * UInt64(r4) + a1 * UInt64(r3) + a2 * UInt64(r2) + a3 * UInt64(r1) + a4 * UInt64(r0)
            var carry = UInt32(truncatingIfNeeded: d0 >> 26); h0 = UInt32(truncatingIfNeeded: d0) & mask
            d1 += UInt64(carry); carry = UInt32(truncatingIfNeeded: d1 >> 26); h1 = UInt32(truncatingIfNeeded: d1) & mask
            d2 += UInt64(carry); carry = UInt32(truncatingIfNeeded: d2 >> 26); h2 = UInt32(truncatingIfNeeded: d2) & mask
            d3 += UInt64(carry); carry = UInt32(truncatingIfNeeded: d3 >> 26); h3 = UInt32(truncatingIfNeeded: d3) & mask
            d4 += UInt64(carry); carry = UInt32(truncatingIfNeeded: d4 >> 26); h4 = UInt32(truncatingIfNeeded: d4) & mask
            h0 &+= carry &* 5; carry = h0 >> 26; h0 &= mask
            h1 &+= carry
            offset += count
        }
        // Fully carried, then reduced mod 2^130 - 5: h - p if that does not go below zero.
        var carry = h1 >> 26; h1 &= mask
        h2 &+= carry; carry = h2 >> 26; h2 &= mask
        h3 &+= carry; carry = h3 >> 26; h3 &= mask
        h4 &+= carry; carry = h4 >> 26; h4 &= mask
        h0 &+= carry &* 5; carry = h0 >> 26; h0 &= mask
        h1 &+= carry
        var g0 = h0 &+ 5; carry = g0 >> 26; g0 &= mask
        var g1 = h1 &+ carry; carry = g1 >> 26; g1 &= mask
        var g2 = h2 &+ carry; carry = g2 >> 26; g2 &= mask
        var g3 = h3 &+ carry; carry = g3 >> 26; g3 &= mask
        var g4 = h4 &+ carry &- (1 << 26)
        var select = (g4 >> 31) &- 1
        g0 &= select; g1 &= select; g2 &= select; g3 &= select; g4 &= select
        select = ~select
        h0 = (h0 & select) | g0; h1 = (h1 & select) | g1; h2 = (h2 & select) | g2; h3 = (h3 & select) | g3; h4 = (h4 & select) | g4
        // h mod 2^128, plus the key's second half.
        let w0 = h0 | (h1 << 26), w1 = (h1 >> 6) | (h2 << 20), w2 = (h2 >> 12) | (h3 << 14), w3 = (h3 >> 18) | (h4 << 8)
        var f = UInt64(w0) + UInt64(word(key, 16))
        let t0 = UInt32(truncatingIfNeeded: f)
        f = UInt64(w1) + UInt64(word(key, 20)) + (f >> 32)
        let t1 = UInt32(truncatingIfNeeded: f)
        f = UInt64(w2) + UInt64(word(key, 24)) + (f >> 32)
        let t2 = UInt32(truncatingIfNeeded: f)
        f = UInt64(w3) + UInt64(word(key, 28)) + (f >> 32)
        let t3 = UInt32(truncatingIfNeeded: f)
        return [t0, t1, t2, t3].flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8),
                                          UInt8(truncatingIfNeeded: $0 >> 16), UInt8(truncatingIfNeeded: $0 >> 24)] }
    }
}
