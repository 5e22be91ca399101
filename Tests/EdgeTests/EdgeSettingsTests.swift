@testable import Edge
import Testing

@Suite("The edge's settings")
struct EdgeSettingsTests {
    @Test("operators are named by user id or by email address (without case); anything else is refused at start")
    func operatorsByIDOrAddress() throws {
        let named = try EdgeSettings(environment: ["HEREABOUTS_EDGE_OPERATORS": "0P7IzwL2JkiuPSU4zA-v9o, u_2, Ops@Example.org"])
        #expect(named.operators == ["0P7IzwL2JkiuPSU4zA-v9o", "u_2", "ops@example.org"])
        for bad in ["not an id", "ops@", "a@b@c.org"] {
            #expect(throws: EdgeSettingsError.self, "\(bad)") { try EdgeSettings(environment: ["HEREABOUTS_EDGE_OPERATORS": bad]) }
        }
    }

    @Test("sockets per address default to 100 and are configurable")
    func socketsPerAddress() throws {
        #expect(try EdgeSettings(environment: [:]).maxSocketsPerAddress == 100)
        #expect(try EdgeSettings(environment: ["HEREABOUTS_EDGE_MAX_SOCKETS_PER_ADDRESS": "3"]).maxSocketsPerAddress == 3)
        #expect(throws: EdgeSettingsError.self) { try EdgeSettings(environment: ["HEREABOUTS_EDGE_MAX_SOCKETS_PER_ADDRESS": "0"]) }
    }
}
