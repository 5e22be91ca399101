import Foundation

/// What carries one endpoint's requests for `AsyncServiceClient`: many callers' at
/// once, each matched to its reply by request id, each try waiting the configured
/// time and sent again with the same id while tries are left (the Lazy Pirate).
public protocol RequestLink: Sendable {
    /// What a caller is given its reply frames, or the error instead, by.
    typealias Completion = @Sendable (Result<[Data], any Error>) -> Void

    /// Sends a request's frames (frame 0 and attachments); `then` gets the reply's
    /// frames, or `unavailable` when no try is answered, or `conflict` when a request
    /// with the same id is in flight on this link.
    func send(_ frames: [Data], id: String, tries: Int, then: @escaping Completion)

    /// Fails what is in flight with `unavailable` and lets the connection go.
    func close()
}
