import Foundation
import ServiceKit
import Testing
import Wire

/// A malformed or hostile request and what it must get: the summary of its error
/// (`invalid_argument title`), `ok` where taking it is right, or nil where the
/// service must not answer at all (frames that are no request).
public struct Rejection: CustomTestStringConvertible, Sendable {
    public var name: String
    public var frames: [Data]
    public var expected: String?
    /// Whether the frames go after the empty delimiter a REQ socket adds.
    public var delimiter: Bool

    public var testDescription: String { name }

    public init(_ name: String, frames: [Data], expected: String?, delimiter: Bool = true) {
        self.name = name
        self.frames = frames
        self.expected = expected
        self.delimiter = delimiter
    }

    /// One request of `op` (its full name) with `body` as JSON text.
    public init(_ name: String, op: String, body: String, token: String? = nil, expected: String) {
        self.init(name, frames: [Self.envelope(op: op, body: body, token: token)], expected: expected)
    }

    /// A request envelope as a client writes it, with the body as given.
    public static func envelope(op: String, body: String, token: String? = nil, id: String = "hostile-1") -> Data {
        let tokenPart = token.map { ",\"token\":\"\($0)\"" } ?? ""
        return Data(#"{"v":1,"id":"\#(id)","op":"\#(op)"\#(tokenPart),"body":\#(body)}"#.utf8)
    }

    /// The ops of `ops` that no case sends.
    public static func uncovered(_ ops: [String], by cases: [Rejection]) -> [String] {
        let sent = Set(cases.flatMap(\.frames).compactMap { (try? JSONParser.parse($0))?.objectValue?["op"]?.stringValue })
        return ops.filter { !sent.contains($0) }.sorted()
    }
}

extension TestStack {
    /// Sends each case to `service` and expects what it names; after each, the
    /// service must still answer, and answer right: `stillAnswers` asks it
    /// something and says whether the answer is right. Every op `service` answers
    /// must meet at least one case.
    public func expectRejections(by service: any RunnableService, named name: String, cases: [Rejection],
                                 sourceLocation: SourceLocation = #_sourceLocation,
                                 stillAnswers: () throws -> Bool) throws {
        let uncovered = Rejection.uncovered(service.ops, by: cases)
        #expect(uncovered.isEmpty, "no hostile case for \(uncovered)", sourceLocation: sourceLocation)
        for rejection in cases {
            try expectRejection(rejection, by: name, sourceLocation: sourceLocation)
            #expect(try stillAnswers(), "after \(rejection.name)", sourceLocation: sourceLocation)
        }
    }

    /// Sends one case to the service `name` and expects what it names.
    public func expectRejection(_ rejection: Rejection, by name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reply = try exchangeRaw(name, frames: rejection.frames, delimiter: rejection.delimiter,
                                    timeout: rejection.expected == nil ? 1 : 10)
        guard let expected = rejection.expected else {
            #expect(reply == nil, "\(rejection.name) was answered", sourceLocation: sourceLocation)
            return
        }
        let frame = try #require(reply?.first, "no reply to \(rejection.name)", sourceLocation: sourceLocation)
        switch ReplyEnvelope.decode(frame).result {
        case .success: #expect(expected == "ok", "\(rejection.name) was accepted", sourceLocation: sourceLocation)
        case .failure(let error): #expect(error.summary == expected, "\(rejection.name): \(error)", sourceLocation: sourceLocation)
        }
    }
}
