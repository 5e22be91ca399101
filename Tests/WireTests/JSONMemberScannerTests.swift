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

    @Test("a quote after a run of backslashes ends a string when the run is even")
    func backslashRuns() {
        // In the JSON text: "\\" (one backslash, escaped), "\"" (a quote), "\\\"" (a backslash and a quote).
        let strings = [#""\\""#, #""\"""#, #""\\\"""#, #""a\\\\""#, #""\\\\\"q""#]
        for string in strings {
            #expect(member("nextCursor", #"{"title":"# + string + #","nextCursor":"c"}"#) == .string("c"), "after \(string)")
            #expect(member("nextCursor", #"{"hits":[{"t":"# + string + #"}],"nextCursor":"c"}"#) == .string("c"),
                    "after \(string) inside an array")
        }
        #expect(member("nextCursor", #"{"title":"\\\","nextCursor":"fake"}"#) == nil, "an odd run: the string never ends")
    }

    @Test("every cut of a reply reads as not found, never past its end")
    func everyCut() {
        let text = Array(#"{"post":{"title":"a \"b\" \\","tags":["x",{"y":[1,2]}],"n":-1.5e3,"version":7},"nextCursor":"c"}"#.utf8)
        // Where each value's last byte is: found from the cut just past it on (a member is
        // read once it is whole: the rest of its object need not be there).
        let seven = text.firstIndex(of: UInt8(ascii: "7"))!
        let cursorEnd = text.count - 2
        for end in 0..<text.count {
            let cut = Data(text[..<end])
            #expect(JSONMemberScanner.member(at: ["post", "version"], of: cut) == (end > seven ? .number(.integer(7)) : nil),
                    "cut at \(end)")
            #expect(JSONMemberScanner.member("nextCursor", of: cut) == (end > cursorEnd ? .string("c") : nil), "cut at \(end)")
        }
        #expect(JSONMemberScanner.member(at: ["post", "version"], of: Data(text)) == .number(.integer(7)))
        #expect(member("nextCursor", String(decoding: text, as: UTF8.self)) == .string("c"))
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
