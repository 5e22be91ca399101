import Foundation
import Testing
import Wire

@Suite("Reading one member of an object's top level")
struct JSONMemberScannerTests {
    func member(_ key: String, _ text: String) -> JSONValue? {
        JSONMemberScanner.member(key, of: Data(text.utf8))
    }

    @Test("the member's value, after members of every kind")
    func found() {
        let text = #"{"hits":[{"id":"a","tags":["x","y"],"rating":{"average":null,"count":0}}],"n":-1.5e3,"t":true,"#
            + #" "nextCursor" : "Y3Vy\u0073or" }"#
        #expect(member("nextCursor", text) == .string("Y3Vysor"))
        #expect(member("n", text) == .number(.double(-1500)))
        #expect(member("t", text) == .bool(true))
        #expect(member("hits", text)?.arrayValueCount == 1)
    }

    @Test("a key inside a nested value, or inside a string, is not the member")
    func onlyTheTopLevel() {
        #expect(member("nextCursor", #"{"hits":[{"nextCursor":"inner"}],"attributes":{"nextCursor":"deeper"}}"#) == nil)
        #expect(member("nextCursor", #"{"title":"\"nextCursor\":\"fake\"","nextCursor":null}"#) == .null)
        #expect(member("nextCursor", #"{"title":"a \\","nextCursor":"after an escaped backslash"}"#)
            == .string("after an escaped backslash"))
    }

    @Test("a name written with escapes is the name it spells")
    func escapedName() {
        #expect(member("nextCursor", #"{"next\u0043ursor":"c"}"#) == .string("c"))
    }

    @Test("a path steps into nested objects, each step at its own object's top level")
    func path() {
        let text = Data(#"{"hits":[],"post":{"tags":{"version":9},"title":"\"version\":8","version":3},"version":1}"#.utf8)
        #expect(JSONMemberScanner.member(at: ["post", "version"], of: text) == .number(.integer(3)))
        #expect(JSONMemberScanner.member(at: ["post", "tags", "version"], of: text) == .number(.integer(9)))
        #expect(JSONMemberScanner.member(at: ["version"], of: text) == .number(.integer(1)))
        #expect(JSONMemberScanner.member(at: ["post", "missing"], of: text) == nil)
        #expect(JSONMemberScanner.member(at: ["hits", "version"], of: text) == nil, "an array is no object to step into")
        #expect(JSONMemberScanner.member(at: ["post", "title", "version"], of: text) == nil, "nor is a string")
        #expect(JSONMemberScanner.member(at: [], of: text) == nil)
    }

    @Test("absent, empty, not an object, or cut short: nil")
    func absent() {
        #expect(member("nextCursor", "{}") == nil)
        #expect(member("nextCursor", " { } ") == nil)
        #expect(member("nextCursor", #"{"hits":[]}"#) == nil)
        #expect(member("nextCursor", #"["nextCursor","x"]"#) == nil)
        #expect(member("nextCursor", #"{"hits":[{"id":"a"}"#) == nil)
        #expect(member("nextCursor", #"{"hits":"unterminated"#) == nil)
        #expect(member("nextCursor", "") == nil)
    }
}

private extension JSONValue {
    var arrayValueCount: Int? {
        if case .array(let items) = self { return items.count }
        return nil
    }
}
