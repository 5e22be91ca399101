import Foundation
import HTTPTypes
import Logging
import TestThreads
import Testing
import Contracts
@testable import Edge

/// `Docs/openapi.yaml` and the routes the edge serves must not drift apart: a route
/// in one and not the other fails here.
@Suite("The OpenAPI document and the edge's routes", .ownThread)
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

    /// (`Docs/openapi.yaml` is a link to the edge's resource: one file.)
    @Test("the edge serves the same document it was built with")
    func bundled() throws {
        let bundled = try #require(EdgeService.openAPIDocument)
        #expect(try bundled == Data(contentsOf: Self.document))
    }

    /// The fields `components/schemas/<name>` lists as `required` (its own layout:
    /// a schema at four spaces, `required: [a, b]` at six).
    static func requiredFields(of schema: String, in text: String) -> Set<String> {
        var inSchema = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("    "), !line.hasPrefix("     ") {
                inSchema = line == "    \(schema):"
            } else if inSchema, line.hasPrefix("      required: [") {
                let list = line.drop(while: { $0 != "[" }).dropFirst().prefix(while: { $0 != "]" })
                return Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            }
        }
        return []
    }

    /// Types whose absent values the protocol writes as `null`, each with every
    /// optional field nil: what a client generated from the document relies on.
    static let sparseSamples: [String: any Encodable & Sendable] = {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let rating = Rating(average: nil, count: 0)
        let profile = PublicProfile(id: "u1", displayName: nil, username: nil, attributes: [:], hasAvatar: false)
        return [
            "Place": Place(id: "1819729", name: "Hong Kong", nameLang: "en", countryCode: "HK", admin1: nil, lat: 22.27832, lon: 114.17469,
                           population: 7_396_076, timezone: "Asia/Hong_Kong"),
            "Country": Country(code: "AQ", name: "Antarctica", capital: nil, population: 0, currencyCode: nil,
                               currencyName: nil, continent: "AN", continentName: "Antarctica", flag: "🇦🇶"),
            "Hit": Hit(id: "p1", distance: nil, kind: "sight", title: "Dom", lat: 52, lon: 5, tags: [], ref: nil, ownerId: "u1",
                       openStatus: nil, rating: rating),
            "Rating": rating,
            "Post": Post(id: "p1", ownerId: "u1", draft: PostDraft(kind: "sight", title: "Dom", lat: 52, lon: 5), createdAt: now,
                         updatedAt: now),
            "Trip": Trip(id: "t1", ownerId: "u1", title: "Utrecht", city: "Utrecht", countryCode: "NL", lat: nil, lon: nil,
                         start: nil, end: nil, createdAt: now),
            "User": User(id: "u1", anonymous: true, createdAt: now),
            "PublicProfile": profile,
        ]
    }()

    @Test("every field a schema requires is written, null when absent", arguments: sparseSamples.keys.sorted())
    func requiredFieldsAreWritten(schema: String) throws {
        let required = Self.requiredFields(of: schema, in: try String(contentsOf: Self.document, encoding: .utf8))
        #expect(!required.isEmpty, "no required list for \(schema)")
        let sample = try #require(Self.sparseSamples[schema])
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(sample)) as? [String: Any]
        let written = Set(try #require(object).keys)
        #expect(required.subtracting(written).sorted() == [], "\(schema) leaves out required fields")
    }
}
