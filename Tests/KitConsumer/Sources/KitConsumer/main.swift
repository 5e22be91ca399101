import Foundation
import HereaboutsKit

// An app's first call, against the server given (default: `here up`'s edge). The
// snippets of Docs/CLIENT.md are compiled beside this file, in Snippets/.
let server = URL(string: CommandLine.arguments.dropFirst().first ?? "http://127.0.0.1:8080")!
let client = Hereabouts(baseURL: server, sessionStore: MemorySessionStore())
do {
    let places = try await client.places(named: "Utrecht", limit: 1)
    print(places.first.map { "\($0.name): \($0.lat), \($0.lon)" } ?? "no such place")
} catch {
    print("\(server): \(error)")
    exit(1)
}
