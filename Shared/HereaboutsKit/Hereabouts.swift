import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A Hereabouts server as an app uses it: sessions kept and refreshed, writes made
/// safe to retry, errors as `HereaboutsError`, pages as async sequences, and live
/// events.
///
/// ```swift
/// let hereabouts = Hereabouts(baseURL: URL(string: "https://api.example.org")!)
/// try await hereabouts.signInAnonymously()
/// for try await hit in hereabouts.search(near: .place("Utrecht"), radius: 2_000, query: "bike") { … }
/// ```
public final class Hereabouts: Sendable {
    public let baseURL: URL
    /// The generated client of every route in the server's OpenAPI document, with
    /// this object's session, retries and errors. For routes the methods here do not
    /// wrap; call it through `send(_:)` to get `HereaboutsError`s.
    public let api: Client
    /// The languages names come back in, most wanted first (BCP 47 tags): sent as
    /// `Accept-Language`, and as the `lang` of a live query around a named place.
    public let languages: [String]
    let sessions: SessionKeeper
    let urlSession: URLSession

    /// - Parameters:
    ///   - baseURL: where the edge answers, e.g. `http://127.0.0.1:8080`.
    ///   - sessionStore: where the session is kept between launches: by default the
    ///     Keychain on Apple platforms and a 0600 file under `~/.config/hereabouts` elsewhere.
    ///   - urlSession: the session requests and the events socket go through.
    ///   - languages: the languages of place and country names, most wanted first;
    ///     by default the device's preferred languages.
    public init(baseURL: URL, sessionStore: (any SessionStore)? = nil, urlSession: URLSession = .shared,
                languages: [String] = Locale.preferredLanguages) {
        self.baseURL = baseURL
        self.urlSession = urlSession
        self.languages = languages
        let transport = URLSessionTransport(configuration: .init(session: urlSession))
        // Refreshing goes around the session's own middleware: it is what that calls.
        let plain = Client(serverURL: baseURL, transport: transport, middlewares: [ProblemMiddleware()])
        let sessions = SessionKeeper(store: sessionStore ?? Self.standardStore(for: baseURL)) { refreshToken in
            let reply = try await ProblemMiddleware.answer {
                try await plain.refresh(body: .json(.init(refreshToken: refreshToken)))
            }
            return Session(try reply.ok.body.json)
        }
        self.sessions = sessions
        // Outermost first: the key is set once, outside the retries that reuse it.
        api = Client(serverURL: baseURL, transport: transport,
                     middlewares: [IdempotencyKeyMiddleware(), LanguageMiddleware(languages: languages), ProblemMiddleware(), RetryMiddleware(),
                                   AuthMiddleware(sessions: sessions)])
    }

    static func standardStore(for baseURL: URL) -> any SessionStore {
        #if canImport(Security)
        KeychainSessionStore.standard(for: baseURL)
        #else
        FileSessionStore.standard(for: baseURL)
        #endif
    }

    /// Calls the generated client, with failures as `HereaboutsError`.
    ///
    /// ```swift
    /// let calendar = try await hereabouts.send { try await $0.tripCalendar(path: .init(id: tripId)).ok.body.textCalendar }
    /// ```
    public func send<Value>(_ call: (Client) async throws -> Value) async throws -> Value {
        do {
            return try await call(api)
        } catch let error as ClientError {
            if let known = error.underlyingError as? HereaboutsError { throw known }
            throw HereaboutsError.unexpected("\(error.underlyingError)")
        } catch let error as HereaboutsError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // An answer of a status the document does not list for the route.
            throw HereaboutsError.unexpected("\(error)")
        }
    }
}
