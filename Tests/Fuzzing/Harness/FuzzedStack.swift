import Auth
import Catalogue
import Chat
import Favourites
import Foundation
import Geo
import ServiceKit
import ServiceKitTesting
import Wire

/// The five services running in this process, each on its own endpoint (so that
/// geo, favourites and chat follow auth and catalogue as they do in production),
/// and answering fuzzed requests through `answer`, with no socket between: the
/// same envelope reading, routing, token checks, body decoding, validation and
/// handlers as a request from the network, one request at a time.
///
/// An input is one request: frame 0, then any further frames, each after a 0x1E
/// byte (a record separator, which JSON text never holds unescaped). Placeholders
/// in frame 0 stand for things a random input cannot guess, so that inputs reach
/// the handlers behind the token check: `$TOKEN`/`$TOKEN2` (two registered users),
/// `$ANON` (an anonymous user), `$REFRESH` (the first user's refresh token),
/// `$USER`/`$USER2` and `$EMAIL`/`$EMAIL2` (password `correct horse battery`), `$POST` (the first user's post, with `$IMAGE` on it, and a
/// notify radius), `$TRIP`, `$CONV` (the two users' conversation).
///
/// Every input goes to all five services. Each reply must be a well-formed reply
/// envelope, and a failure must carry one of the protocol's codes other than
/// `internal` and `unavailable`: those mean a bug, which `check` reports.
public final class FuzzedStack {
    /// A reply that breaks the protocol's promises for this input.
    public struct Finding: Error, CustomStringConvertible {
        public let service: String
        public let problem: String
        public var description: String { "\(service): \(problem)" }
    }

    public static let frameSeparator: UInt8 = 0x1E

    private let stack: TestStack
    private let services: [(name: String, service: any RunnableService)]
    private var fixtures: [String: String] = [:]
    private let freshFixtures: Bool
    private var generation = 0
    private var calls = 0

    /// - Parameter freshFixtures: new fixtures before every input that names one,
    ///   so that each input meets the same state whatever came before it (for the
    ///   corpus replay). Otherwise, as while fuzzing, fixtures are renewed only when
    ///   an input is refused for a fixture token that an earlier input spent.
    public init(freshFixtures: Bool = false) throws {
        self.freshFixtures = freshFixtures
        stack = try TestStack()
        var environment = stack.environment
        environment["HEREABOUTS_RATE_LIMIT"] = "0"
        let logger = TestStack.logger("fuzz")
        func settings(_ service: String) throws -> ServiceSettings {
            try ServiceSettings(service: service, overrides: .init(workers: 1), environment: environment)
        }
        let auth = try AuthService(settings: try settings("auth"), options: .cheapHashingForTests, logger: logger)
        try stack.start(auth)
        let catalogue = try CatalogueService(settings: try settings("catalogue"), logger: logger)
        try stack.start(catalogue)
        let geo = try GeoService(settings: try settings("geo"), logger: logger)
        try stack.start(geo)
        let favourites = try FavouritesService(settings: try settings("favourites"), logger: logger)
        try stack.start(favourites)
        let chat = try ChatService(settings: try settings("chat"), logger: logger)
        try stack.start(chat)
        services = [("auth", auth), ("catalogue", catalogue), ("geo", geo), ("favourites", favourites), ("chat", chat)]
        try makeFixtures()
    }

    deinit { stack.stop() }

    /// Sends one input to every service; throws the first broken promise. Returns
    /// how the services answered: "ok" or the error code, for those that know the op.
    @discardableResult
    public func check(_ input: [UInt8]) throws(Finding) -> [String] {
        let frames = input.split(separator: Self.frameSeparator, omittingEmptySubsequences: false).map { Data($0) }
        if freshFixtures, frames.first?.contains(UInt8(ascii: "$")) == true {
            do {
                try makeFixtures()
            } catch {
                throw Finding(service: "harness", problem: "could not make the fixtures: \(error)")
            }
        }
        let (answers, staleFixtures) = try answer(frames.isEmpty ? [Data()] : frames)
        guard staleFixtures, !freshFixtures else { return answers }
        // An earlier input logged a fixture user out or deleted it: make new ones,
        // and give this input its chance to reach the handler.
        do {
            try makeFixtures()
        } catch {
            throw Finding(service: "harness", problem: "could not renew the fixtures: \(error)")
        }
        return try answer(frames.isEmpty ? [Data()] : frames).answers
    }

    /// Every service's answer to the frames (placeholders filled in), and whether a
    /// fixture token was refused.
    private func answer(_ frames: [Data]) throws(Finding) -> (answers: [String], staleFixtures: Bool) {
        var frames = frames
        let (frame0, usesToken) = substitute(frames[0])
        frames[0] = frame0
        var staleFixtures = false
        var answers: [String] = []
        for (name, service) in services {
            let reply = service.answer(frames)
            let code = try Self.verify(reply, from: name)
            if usesToken, code == .unauthenticated { staleFixtures = true }
            if code != .unknownOp { answers.append("\(name): \(code?.rawValue ?? "ok")") }
            if ProcessInfo.processInfo.environment["HEREABOUTS_FUZZ_TRACE"] != nil, code != .unknownOp, let first = reply.first {
                print(String(decoding: first.prefix(300), as: UTF8.self))
            }
        }
        return (answers, staleFixtures)
    }

    /// Checks one reply: a reply envelope, and on failure a protocol code that is
    /// not `internal` or `unavailable`. Returns the failure's code, nil on success.
    public static func verify(_ reply: [Data], from service: String) throws(Finding) -> ErrorCode? {
        guard let first = reply.first else { throw Finding(service: service, problem: "no reply frames") }
        switch ReplyEnvelope.decode(first).result {
        case .success:
            return nil
        case .failure(let error):
            guard ErrorCode.protocolCodes.contains(error.code), error.code != .internal, error.code != .unavailable else {
                throw Finding(service: service, problem: "\(error.code): \(error.message) (reply \(String(decoding: first, as: UTF8.self)))")
            }
            return error.code
        }
    }

    // MARK: Placeholders

    private func substitute(_ frame0: Data) -> (Data, usesToken: Bool) {
        guard frame0.contains(UInt8(ascii: "$")) else { return (frame0, false) }
        var text = String(decoding: frame0, as: UTF8.self)
        var usesToken = false
        // Longest names first: `$TOKEN2` before `$TOKEN`, `$USER2` before `$USER`.
        for name in fixtures.keys.sorted(by: { $0.count > $1.count }) where text.contains(name) {
            text = text.replacingOccurrences(of: name, with: fixtures[name]!)
            if name.hasPrefix("$TOKEN") || name == "$ANON" || name == "$REFRESH" { usesToken = true }
        }
        return (Data(text.utf8), usesToken)
    }

    /// Two registered users, an anonymous one, a post with an image, a trip and a
    /// conversation; waits until geo, favourites and chat have followed them.
    private func makeFixtures() throws {
        generation += 1
        let password = "correct horse battery"
        let email = "fuzz\(generation)a@example.org", email2 = "fuzz\(generation)b@example.org"
        let first = try call("auth", "auth.register", #"{"email":"\#(email)","password":"\#(password)"}"#)
        let second = try call("auth", "auth.register", #"{"email":"\#(email2)","password":"\#(password)"}"#)
        let anonymous = try call("auth", "auth.anonymous", "{}")
        let token = try first.string("accessToken"), token2 = try second.string("accessToken")
        let user = try first.object("user").string("id"), user2 = try second.object("user").string("id")
        let post = try call("catalogue", "catalogue.posts.create", #"""
            {"kind":"sight","title":"Fuzz tower","text":"a tower","lat":48.8584,"lon":2.2945,"tags":["tower"],
             "hours":"Mo-Su 09:00-18:00","timezone":"Europe/Paris","notifyRadius":200}
            """#, token: token).object("post").string("id")
        let image = try call("catalogue", "catalogue.images.add", #"{"postId":"\#(post)"}"#, token: token,
                             attachments: [TestImages.png(width: 3, height: 2)]).object("image").string("id")
        let trip = try call("catalogue", "catalogue.trips.create", #"{"title":"Fuzz trip","city":"Paris","countryCode":"FR"}"#,
                            token: token).object("trip").string("id")
        // Followers apply the changes moments later: retry until they have.
        let conversation = try eventually {
            try call("chat", "chat.send", #"{"to":"\#(user2)","text":"hello"}"#, token: token).object("message").string("conversationId")
        }
        _ = try eventually { try call("favourites", "favourites.add", #"{"postId":"\#(post)"}"#, token: token) }
        _ = try eventually {
            let hits = try call("geo", "geo.search", #"{"lat":48.8584,"lon":2.2945,"radius":1000,"q":"tower"}"#)
            guard case .array(let found)? = hits["hits"], !found.isEmpty else { throw HarnessError("geo has not indexed the post yet") }
            return hits
        }
        fixtures = [
            "$TOKEN": token, "$TOKEN2": token2, "$ANON": try anonymous.string("accessToken"),
            "$REFRESH": try first.string("refreshToken"), "$USER": user, "$USER2": user2, "$EMAIL": email, "$EMAIL2": email2,
            "$POST": post, "$IMAGE": image, "$TRIP": trip, "$CONV": conversation,
        ]
    }

    private func eventually<T>(_ attempt: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(10)
        while true {
            do {
                return try attempt()
            } catch where Date() < deadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }

    private func call(_ service: String, _ op: String, _ body: String, token: String? = nil,
                      attachments: [Data] = []) throws -> JSONObject {
        guard let target = services.first(where: { $0.name == service })?.service else { throw HarnessError("no \(service)") }
        calls += 1
        let frame0 = RequestEnvelope.encode(id: "fixture-\(calls)", op: op, token: token, body: try JSONParser.parse(Data(body.utf8)))
        guard let reply = target.answer([frame0] + attachments).first else { throw HarnessError("\(op): no reply") }
        return try ReplyEnvelope.decode(reply).result.get()
    }
}

private struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

private extension JSONObject {
    func string(_ key: String) throws -> String {
        guard case .string(let value)? = self[key] else { throw HarnessError("no string \(key) in the reply") }
        return value
    }

    func object(_ key: String) throws -> JSONObject {
        guard case .object(let value)? = self[key] else { throw HarnessError("no object \(key) in the reply") }
        return value
    }
}

extension ErrorCode {
    /// Every code of the protocol's error table.
    static let protocolCodes: Set<ErrorCode> = [
        .badRequest, .unknownOp, .invalidArgument, .unauthenticated, .permissionDenied, .notFound,
        .alreadyExists, .conflict, .tooLarge, .rateLimited, .unavailable, .internal,
    ]
}

/// The input files of a corpus: a file as it is, a folder's regular files by name.
public enum CorpusFiles {
    public static func list(_ path: String) throws -> [URL] {
        let url = URL(fileURLWithPath: path)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        guard isFolder.boolValue else { return [url] }
        return try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
            .filter { !$0.hasDirectoryPath && !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}
