import CSodium

/// NaCl's `crypto_box` after its key is agreed (X25519, XSalsa20, Poly1305), which
/// CurveZMQ (ZeroMQ RFC 26) seals every command and message with, in libsodium's
/// "easy" layout: the 16-byte tag, then the ciphertext. libsodium is the library
/// libzmq itself seals with (Debian's libzmq depends on it), so the edge's boxes are
/// the services' to the byte, and its Salsa20 and Poly1305 are the tuned ones: a
/// search's 6.8 KB reply opens in a few microseconds.
struct SecretBox {
    /// `crypto_box_beforenm`'s key: HSalsa20 of the X25519 secret the two keys share.
    let key: [UInt8]

    static let tagBytes = Int(crypto_box_MACBYTES)
    static let nonceBytes = Int(crypto_box_NONCEBYTES)

    /// libsodium picks its implementations once, before the first use.
    private static let initialized: Bool = sodium_init() >= 0

    /// `crypto_box_beforenm`: the key a sender with `secretKey` shares with `publicKey`.
    init(publicKey: [UInt8], secretKey: [UInt8]) throws {
        guard Self.initialized else { throw ZMTPProtocolError(description: "libsodium could not start") }
        guard publicKey.count == Int(crypto_box_PUBLICKEYBYTES), secretKey.count == Int(crypto_box_SECRETKEYBYTES) else {
            throw ZMTPProtocolError(description: "a CURVE key is not 32 bytes")
        }
        var key = [UInt8](repeating: 0, count: Int(crypto_box_BEFORENMBYTES))
        // Fails for a public key of low order (no shared secret): refused, like libzmq.
        guard crypto_box_beforenm(&key, publicKey, secretKey) == 0 else {
            throw ZMTPProtocolError(description: "the peer's CURVE key shares no secret")
        }
        self.key = key
    }

    /// The tag, then the ciphertext.
    func seal(_ plaintext: some Collection<UInt8>, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == Self.nonceBytes, "a box's nonce is 24 bytes")
        let plaintext = Array(plaintext)
        return [UInt8](unsafeUninitializedCapacity: plaintext.count + Self.tagBytes) { out, count in
            // Only fails for a message longer than libsodium's limit (about 2^64 bytes).
            _ = crypto_box_easy_afternm(out.baseAddress!, plaintext, UInt64(plaintext.count), nonce, key)
            count = plaintext.count + Self.tagBytes
        }
    }

    /// The plaintext, or nil when the tag does not match (a forged or damaged box).
    func open(_ box: some Collection<UInt8>, nonce: [UInt8]) -> [UInt8]? {
        let box = Array(box)
        return box.withUnsafeBytes { open($0, nonce: nonce) }
    }

    /// The plaintext of the box in `box`, or nil when its tag does not match.
    func open(_ box: UnsafeRawBufferPointer, nonce: [UInt8]) -> [UInt8]? {
        precondition(nonce.count == Self.nonceBytes, "a box's nonce is 24 bytes")
        guard box.count >= Self.tagBytes, let boxBytes = box.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        var opened = true
        let text = [UInt8](unsafeUninitializedCapacity: box.count - Self.tagBytes) { out, count in
            opened = crypto_box_open_easy_afternm(out.baseAddress, boxBytes, UInt64(box.count), nonce, key) == 0
            count = opened ? box.count - Self.tagBytes : 0
        }
        return opened ? text : nil
    }
}
