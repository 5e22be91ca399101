import Contracts
import Foundation
import ServiceClient
import ServiceKit
import Synchronization
import Wire

/// One line of `posts.tsv`: `ref kind lat lon title`.
struct DatasetPost: Sendable {
    var ref: String
    var kind: String
    var lat: Double
    var lon: Double
    var title: String
    /// Opening hours and their zone, for the benchmarks that give posts some.
    var hours: String?
    var timezone: String?

    static func load(_ dataset: URL) throws -> [DatasetPost] {
        try tabSeparated(dataset.appendingPathComponent("posts.tsv")).compactMap { fields in
            guard fields.count == 5, let lat = Double(fields[2]), let lon = Double(fields[3]) else { return nil }
            return DatasetPost(ref: String(fields[0]), kind: String(fields[1]), lat: lat, lon: lon, title: String(fields[4]))
        }
    }
}

/// One line of `queries.tsv`: `lat lon radius term` (the term may be empty).
struct DatasetQuery: Sendable {
    var lat: Double
    var lon: Double
    var radius: Double
    var term: String

    static func load(_ dataset: URL) throws -> [DatasetQuery] {
        try tabSeparated(dataset.appendingPathComponent("queries.tsv")).compactMap { fields in
            guard fields.count >= 3, let lat = Double(fields[0]), let lon = Double(fields[1]), let radius = Double(fields[2]) else { return nil }
            return DatasetQuery(lat: lat, lon: lon, radius: radius, term: fields.count > 3 ? String(fields[3]) : "")
        }
    }

    /// Frame 0 of the `geo.search` the benchmarks send for this query: the top 20
    /// by distance, with the term as `q` when there is one.
    var searchFrame: Data { searchFrame(highlight: true) }

    /// The query as `geo.search`; `highlight: false` asks hits without their highlights;
    /// `openNow` only venues open at `at`.
    func searchFrame(highlight: Bool, openNow: Bool = false, at: String? = nil) -> Data {
        var body: [(String, JSONValue)] = [("lat", .number(.double(lat))), ("lon", .number(.double(lon))),
                                           ("radius", .number(.double(radius))), ("limit", .number(.integer(20)))]
        if !term.isEmpty { body.append(("q", .string(term))) }
        if !highlight { body.append(("highlight", .bool(false))) }
        if openNow { body.append(("openNow", .bool(true))) }
        if let at { body.append(("at", .string(at))) }
        return RequestEnvelope.encode(id: "q", op: GeoAPI.search.name, token: nil, body: .object(JSONObject(body)))
    }
}

/// The lines of a file of tab-separated fields (empty fields kept).
private func tabSeparated(_ file: URL) throws -> [[Substring]] {
    try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map {
        $0.split(separator: "\t", omittingEmptySubsequences: false)
    }
}

/// The dataset through `catalogue.posts.import`, in batches of 1,000 from two importers.
enum DatasetImport {
    struct Result {
        var seconds: Double
        var batches: Int
        var failures: Int
        /// The post id catalogue gave each dataset post, in the dataset's order.
        var ids: [String]
    }

    static func run(_ posts: [DatasetPost], token: String, endpoint: String) throws -> Result {
        var frames: [Data] = []
        var batch: [JSONValue] = []
        for post in posts {
            var fields: [(String, JSONValue)] = [("ref", .string(post.ref)), ("kind", .string(post.kind)), ("title", .string(post.title)),
                                                 ("lat", .number(.double(post.lat))), ("lon", .number(.double(post.lon)))]
            if let hours = post.hours, let timezone = post.timezone {
                fields += [("hours", .string(hours)), ("timezone", .string(timezone))]
            }
            batch.append(.object(JSONObject(fields)))
            if batch.count == 1000 || frames.count * 1000 + batch.count == posts.count {
                frames.append(RequestEnvelope.encode(id: "import-\(frames.count)", op: CatalogueAPI.importPosts.name, token: token,
                                                     body: .object(JSONObject([("posts", .array(batch))]))))
                batch.removeAll(keepingCapacity: true)
            }
        }
        let batches = frames
        // Two importers keep the service busy: one batch is parsed while another commits.
        let next = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let ids = Mutex<[Int: [String]]>([:])
        let start = Date()
        let importers = (0..<2).map { index in
            ServiceThread(name: "import-\(index)") {
                let client = ServiceClient(service: "catalogue", endpoint: endpoint, timeout: 120, tries: 1)
                defer { client.close() }
                while true {
                    let number = next.add(1, ordering: .relaxed).oldValue
                    guard number < batches.count else { return }
                    let reply: [Data]?
                    do {
                        reply = try client.exchange([batches[number]])
                    } catch {
                        print("import batch \(number): \(error)")
                        failures.add(1, ordering: .relaxed)
                        continue
                    }
                    guard let reply, case .success(let body) = ReplyEnvelope.decode(reply[0]).result,
                          let decoded = try? JSONValueDecoder().decode(ImportReply.self, from: .object(body)) else {
                        print("import batch \(number): \(reply.map { String(decoding: $0[0].prefix(300), as: UTF8.self) } ?? "no reply")")
                        failures.add(1, ordering: .relaxed)
                        continue
                    }
                    ids.withLock { $0[number] = decoded.ids }
                }
            }
        }
        importers.forEach { $0.join() }
        let seconds = Date().timeIntervalSince(start)
        let byBatch = ids.withLock { $0 }
        let all = (0..<batches.count).flatMap { byBatch[$0] ?? [] }
        return Result(seconds: seconds, batches: batches.count, failures: failures.load(ordering: .relaxed), ids: all)
    }

    /// The dataset through catalogue while geo follows: the import, and the seconds
    /// from its start until geo held every post with nothing left to apply (nil when
    /// not within 10 minutes).
    static func runUntilSearchable(_ posts: [DatasetPost], token: String, catalogue: String,
                                   geo: String) throws -> (imported: Result, searchable: Double?) {
        let searchable = Mutex<Double?>(nil)
        let start = Date()
        let expected = posts.count
        let watcher = ServiceThread(name: "watch-geo") {
            let client = ServiceClient(service: "geo", endpoint: geo, timeout: 30, tries: 1)
            defer { client.close() }
            while Date().timeIntervalSince(start) < 600 {
                if let stats = try? client.call(GeoAPI.stats, Empty()), stats.posts >= expected, stats.lag.values.allSatisfy({ $0 == 0 }) {
                    searchable.withLock { $0 = Date().timeIntervalSince(start) }
                    return
                }
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
        let imported = try run(posts, token: token, endpoint: catalogue)
        watcher.join()
        guard imported.failures == 0, imported.ids.count == posts.count else {
            throw PeerError("the import failed: \(imported.failures) batches")
        }
        return (imported, searchable.withLock { $0 })
    }
}
