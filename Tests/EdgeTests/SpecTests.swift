import Foundation
import HTTPTypes
import Logging
import Testing
@testable import Edge

/// `Docs/openapi.yaml` and the routes the edge serves must not drift apart: a route
/// in one and not the other fails here.
@Suite("The OpenAPI document and the edge's routes")
struct SpecTests {
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Docs/openapi.yaml")

    /// `(METHOD, /path/{param})` for every operation under `paths:` (the document's
    /// own layout: a path at two spaces, its methods at four).
    static func documentedRoutes(_ text: String) -> Set<String> {
        var routes: Set<String> = []
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty {
                inPaths = line == "paths:"
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast()).trimmingCharacters(in: CharacterSet(charactersIn: "'\""))
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                      let method = ["get", "put", "post", "delete", "patch", "head", "options"]
                          .first(where: { line == "    \($0):" }) {
                routes.insert("\(method.uppercased()) \(path)")
            }
        }
        return routes
    }

    static func servedRoutes() throws -> Set<String> {
        let settings = try EdgeSettings(environment: ["HEREABOUTS_DATA_DIR": "/tmp/hb-spec-unused"], listen: "127.0.0.1:0")
        let edge = try EdgeService(settings: settings, logger: Logger(label: "spec"))
        defer { edge.close() }
        return Set(edge.routes.routes.map { "\($0.method.rawValue) \($0.pattern)" })
    }

    @Test("every route the edge serves is in the document, and every documented route is served")
    func noDrift() throws {
        let documented = Self.documentedRoutes(try String(contentsOf: Self.document, encoding: .utf8))
        let served = try Self.servedRoutes()
        #expect(documented.count >= 50, "the document parsed to \(documented.count) routes")
        #expect(served.subtracting(documented).sorted() == [], "served but not documented")
        #expect(documented.subtracting(served).sorted() == [], "documented but not served")
    }

    @Test("the check sees a route missing from the document")
    func driftIsSeen() throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let without = text.replacingOccurrences(of: "\n  /v1/me/password:\n", with: "\n  /v1/me/passwords:\n")
        let documented = Self.documentedRoutes(without)
        let served = try Self.servedRoutes()
        #expect(served.subtracting(documented) == ["POST /v1/me/password"])
        #expect(documented.subtracting(served) == ["POST /v1/me/passwords"])
    }

    @Test("the edge serves the same document it was built with")
    func bundled() throws {
        let bundled = try #require(EdgeService.openAPIDocument)
        #expect(try bundled == Data(contentsOf: Self.document))
    }
}
