import ArgumentParser
import Contracts
import Foundation
import GRDB
import OpeningHours
import ServiceKit
import Wire
@_spi(Benchmarks) import Catalogue
@_spi(Benchmarks) import Geo

/// Times the stages of one request in this process, to see where a service's
/// time goes (no sockets).
struct Micro: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Times the stages of a request in-process.")

    @Option var iterations: Int = 100_000

    func run() throws {
        // Opening hours (issue 40: parsing under 20 µs): a plain week, a restaurant with
        // holidays and a break, a seasonal value with dates and the sun, a tolerant form.
        for value in ["Mo-Fr 09:00-18:00; Sa 10:00-16:00",
                      "Mo-Th 11:30-14:30,17:30-23:00; Fr-Sa 11:30-00:30; Su 12:00-22:00; PH off; Dec 24-26 off",
                      "Apr-Oct Mo-Su sunrise-(sunset-01:00); Nov-Mar Sa,Su 10:00-16:00; Dec 25 off; easter -2 days off",
                      "Mon-Fri 9am-6pm, Sat 10am-2pm"] {
            measure("opening hours parse: \(value.prefix(28))…", iterations: 20_000) { _ = try? OpeningHours(parsing: value) }
        }
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        let place = OpeningHoursPlace(latitude: 52.52, longitude: 13.4, country: "DE", subdivision: "BE")
        let seasonal = try OpeningHours(parsing: "Apr-Oct Mo-Su sunrise-(sunset-01:00); Nov-Mar Sa,Su 10:00-16:00; PH off")
        let weekly = try OpeningHours(parsing: "Mo-Fr 09:00-18:00; Sa 10:00-16:00")
        let window = LocalWindow(instant: Date(), timeZone: berlin)
        measure("opening hours status: weekly", iterations: 200_000) { _ = weekly.status(in: window, place: place) }
        measure("opening hours status: seasonal with sun and PH", iterations: 20_000) { _ = seasonal.status(in: window, place: place) }
        measure("opening hours state with nextChange: seasonal", iterations: 20_000) {
            _ = seasonal.state(at: Date(), in: berlin, place: place)
        }
        let frame0 = Data(#"{"v":1,"id":"bench-1","op":"auth.users.get","body":{"ids":["7CXNvCFxB7OxU5l4V7SK8W"]}}"#.utf8)
        measure("envelope decode") { _ = try? RequestEnvelope.decode(frames: [frame0]) }
        let envelope = try RequestEnvelope.decode(frames: [frame0])
        measure("body decode") { _ = try? envelope.decodeBody(UsersGetRequest.self) }
        let search = try RequestEnvelope.decode(frames: [Data(
            #"{"v":1,"id":"q","op":"geo.search","body":{"lat":48.85341,"lon":2.3488,"radius":2500,"limit":20,"q":"bakery"}}"#.utf8)])
        measure("geo.search body decode") { _ = try? search.decodeBody(SearchRequest.self) }
        let profile = PublicProfile(id: "7CXNvCFxB7OxU5l4V7SK8W", displayName: "Bench Mark", username: nil,
                                    attributes: ["dives": .number(120), "certification": .string("PADI AOW")], hasAvatar: false)
        let reply = UsersReply(users: [profile])
        measure("reply encode (JSONValueEncoder)") { _ = try? ReplyEnvelope.success(id: "bench-1", body: JSONValueEncoder().encode(reply)) }
        measure("reply encode (Foundation JSONEncoder)") { _ = try? JSONEncoder().encode(reply) }

        let directory = URL(fileURLWithPath: "/tmp/hb-micro-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try ServiceDatabase(path: directory.appendingPathComponent("m.sqlite").path) { migrator in
            migrator.registerMigration("m") { db in
                try db.execute(sql: "CREATE TABLE user (id TEXT PRIMARY KEY, display_name TEXT, attributes TEXT)")
                try db.execute(sql: "INSERT INTO user VALUES ('7CXNvCFxB7OxU5l4V7SK8W', 'Bench', '{}')")
            }
        }
        measure("pool.read + cached statement row") {
            _ = try? database.pool.read { db in
                try Row.fetchOne(db.cachedStatement(sql: "SELECT id, display_name, attributes FROM user WHERE id = ?"),
                                 arguments: ["7CXNvCFxB7OxU5l4V7SK8W"])
            }
        }
        measure("pool.unsafeRead + cached statement row") {
            _ = try? database.pool.unsafeRead { db in
                try Row.fetchOne(db.cachedStatement(sql: "SELECT id, display_name, attributes FROM user WHERE id = ?"),
                                 arguments: ["7CXNvCFxB7OxU5l4V7SK8W"])
            }
        }
        measure("pool.read + query interface") {
            _ = try? database.pool.read { db in
                try Row.fetchOne(db, sql: "SELECT id, display_name, attributes FROM user WHERE id = ?", arguments: ["7CXNvCFxB7OxU5l4V7SK8W"])
            }
        }
        if let path = ProcessInfo.processInfo.environment["MICRO_AUTH_DB"] {
            let auth = try DatabasePool(path: path)
            let userID = try auth.read { db in try String.fetchOne(db, sql: "SELECT id FROM user LIMIT 1") } ?? ""
            let sessionID = try auth.read { db in try String.fetchOne(db, sql: "SELECT id FROM session LIMIT 1") } ?? ""
            measure("auth: session check (pool.read)") {
                _ = try? auth.read { db in
                    try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS(SELECT 1 FROM session WHERE id = ? AND user_id = ? AND revoked_at IS NULL)"),
                                      arguments: [sessionID, userID])
                }
            }
            measure("auth: user row (pool.read)") {
                _ = try? auth.read { db in
                    try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM user WHERE id = ?"), arguments: [userID])
                }
            }
        }
        let user = User(id: "7CXNvCFxB7OxU5l4V7SK8W", email: "a@example.org", username: "ada", displayName: "Ada",
                        attributes: ["dives": .number(120)], anonymous: false, createdAt: Date())
        measure("encode UserReply") { _ = try? JSONValueEncoder().encodeData(UserReply(user: user)) }
        measure("Timestamp.format") { _ = Timestamp.format(Date()) }
        if ProcessInfo.processInfo.environment["MICRO_CATALOGUE"] == "1" {
            try catalogueWrites()
        }
        if let dataset = ProcessInfo.processInfo.environment["MICRO_GEO"] {
            try geoSearches(dataset: URL(fileURLWithPath: dataset))
        }
        if let dataset = ProcessInfo.processInfo.environment["MICRO_HOURS"] {
            try hoursSearches(dataset: URL(fileURLWithPath: dataset))
        }
        measure("attributes JSON decode") { _ = try? JSONValueDecoder().decode(Attributes.self, from: Data(#"{"dives":120,"certification":"PADI AOW"}"#.utf8)) }
    }

    /// Geo's search of the dataset's queries in memory, on this thread: the index's
    /// share of `geo.search`, without envelope, sockets or the front thread's other work.
    private func geoSearches(dataset: URL) throws {
        let posts = try DatasetPost.load(dataset), queries = try DatasetQuery.load(dataset)
        let path = SearchPath(posts: posts.map { ($0.ref, $0.kind, $0.lat, $0.lon, $0.title) })
        for withTerm in [false, true] {
            let chosen = queries.filter { $0.term.isEmpty != withTerm }
            func searchAll() {
                for query in chosen {
                    _ = path.search(lat: query.lat, lon: query.lon, radius: query.radius, q: withTerm ? query.term : nil, limit: 20)
                }
            }
            searchAll()  // warm-up
            measure("geo: search of the dataset's queries \(withTerm ? "with" : "without") a term",
                    iterations: 3, unitsPerIteration: chosen.count, searchAll)
        }
    }

    /// Geo's search of the dataset with the hours benchmark's opening hours, without
    /// and with `openNow`: what judging hours costs a search, in memory on this thread.
    private func hoursSearches(dataset: URL) throws {
        let posts = try DatasetPost.load(dataset), queries = try DatasetQuery.load(dataset)
        let values = HoursBenchmark.values
        let path = SearchPath(posts: posts.map { ($0.ref, $0.kind, $0.lat, $0.lon, $0.title) }) { (values[$0 % values.count], "Europe/Berlin") }
        let at = Timestamp.parse(HoursBenchmark.at)!
        for openNow in [false, true, false, true] {
            func searchAll() {
                for query in queries {
                    _ = path.search(lat: query.lat, lon: query.lon, radius: query.radius, q: query.term.isEmpty ? nil : query.term,
                                    limit: 20, openNow: openNow, at: at)
                }
            }
            let bytes = queries.reduce(0) { total, query in
                total + path.search(lat: query.lat, lon: query.lon, radius: query.radius, q: query.term.isEmpty ? nil : query.term,
                                    limit: 20, openNow: openNow, at: at)
            }
            measure("geo with hours: search\(openNow ? " with openNow" : "") (\(bytes / queries.count) bytes of hits)",
                    iterations: 2, unitsPerIteration: queries.count, searchAll)
        }
    }

    /// The database's share of a create, without sockets: per transaction, and in batches.
    private func catalogueWrites() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-micro-cat-\(UUID().uuidString.prefix(6))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let settings = try ServiceSettings(service: "catalogue", environment: ["HEREABOUTS_DATA_DIR": directory.path])
        let path = try CatalogueWritePath(settings: settings)
        let database = path.database
        let draft = PostDraft(kind: "offer", title: "Bike", text: "Good as new.", lat: 52.1, lon: 5.1, tags: ["bike", "used"])
        var counter = 0
        measure("catalogue prepare (no SQL)", iterations: 20000) { _ = path.prepare(draft) }
        measure("catalogue insertPost, one per transaction", iterations: 5000) {
            _ = try? database.pool.write { db in try path.insert(draft, in: db) }
        }
        measure("insertPost + kept reply, one per transaction", iterations: 5000) {
            counter += 1
            _ = try? database.pool.write { db in
                let json = try path.insert(draft, in: db)
                try IdempotencyLog.record(IdempotencyKey(op: "catalogue.posts.create", requestID: Identifier.sortable(), caller: "u1"),
                                          fingerprint: Data(count: 32), answer: .reply(Data(json)), in: db)
            }
        }
        measure("insertPost, 8 per transaction", iterations: 625, unitsPerIteration: 8) {
            _ = try? database.pool.write { db in
                for _ in 0..<8 { _ = try path.insert(draft, in: db) }
            }
        }
        measure("insertPost + kept reply, 8 per transaction", iterations: 625, unitsPerIteration: 8) {
            _ = try? database.pool.write { db in
                for _ in 0..<8 {
                    counter += 1
                    let json = try path.insert(draft, in: db)
                    try IdempotencyLog.record(IdempotencyKey(op: "catalogue.posts.create", requestID: Identifier.sortable(), caller: "u1"),
                                              fingerprint: Data(count: 32), answer: .reply(Data(json)), in: db)
                }
            }
        }
    }

    private func measure(_ label: String, iterations: Int? = nil, unitsPerIteration: Int = 1, _ body: () -> Void) {
        let iterations = iterations ?? self.iterations
        for _ in 0..<min(1000, iterations / 10) { body() }
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<iterations { body() }
        let nanos = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(iterations * unitsPerIteration)
        print("\(label.padding(toLength: 44, withPad: " ", startingAt: 0)) \(format(nanos / 1000, 2)) µs")
    }
}
