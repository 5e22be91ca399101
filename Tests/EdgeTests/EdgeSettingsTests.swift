@testable import Edge
import Testing

@Suite("The edge's settings")
struct EdgeSettingsTests {
    @Test("operators are named by user id: an email address is refused at start with what to use instead")
    func operatorsByID() throws {
        let named = try EdgeSettings(environment: ["HEREABOUTS_EDGE_OPERATORS": "0P7IzwL2JkiuPSU4zA-v9o, u_2"])
        #expect(named.operators == ["0P7IzwL2JkiuPSU4zA-v9o", "u_2"])
        do {
            _ = try EdgeSettings(environment: ["HEREABOUTS_EDGE_OPERATORS": "ops@example.org"])
            Issue.record("an email address was taken as an operator")
        } catch let error as EdgeSettingsError {
            #expect(error.description.contains("user id") && error.description.contains("ops@example.org"))
        }
        #expect(throws: EdgeSettingsError.self) { try EdgeSettings(environment: ["HEREABOUTS_EDGE_OPERATORS": "not an id"]) }
    }

    @Test("sockets per address default to 100 and are configurable")
    func socketsPerAddress() throws {
        #expect(try EdgeSettings(environment: [:]).maxSocketsPerAddress == 100)
        #expect(try EdgeSettings(environment: ["HEREABOUTS_EDGE_MAX_SOCKETS_PER_ADDRESS": "3"]).maxSocketsPerAddress == 3)
        #expect(throws: EdgeSettingsError.self) { try EdgeSettings(environment: ["HEREABOUTS_EDGE_MAX_SOCKETS_PER_ADDRESS": "0"]) }
    }
}
