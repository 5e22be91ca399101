import Contracts
import Foundation
import ServiceKitTesting
import Wire

/// Issue 40's figure: `openNow` filtering against the same searches without it, on
/// the dataset with opening hours of the kinds OpenStreetMap's restaurants and shops
/// carry (a plain week, split shifts, holidays, seasons, the sun).
struct HoursBenchmark {
    var seconds: Double
    var directory: URL
    var dataset: URL
    var report: BenchmarkReport

    /// Given to the posts in turn: a quarter depend on the place (`PH`, the sun), so geo
    /// keeps them per point (0.01°) and judges holidays in the point's country.
    static let values = [
        "Mo-Fr 09:00-18:00; Sa 10:00-16:00",
        "Mo-Su 11:00-23:00",
        "Mo-Th 11:30-14:30,17:30-23:00; Fr-Sa 11:30-14:30,17:30-00:30; Su 12:00-22:00",
        "Mo-Sa 08:00-20:00; PH off",
        "Tu-Su 10:00-18:00; Mo off; Dec 24-26 off",
        "24/7",
        "Apr-Oct Mo-Su 10:00-19:00; Nov-Mar Sa,Su 10:00-16:00",
        "sunrise-sunset",
    ]

    /// A Wednesday at noon in Berlin, for every search: the same instant judges both sides.
    static let at = "2026-11-25T11:00:00Z"

    func run() throws -> String {
        let posts = try DatasetPost.load(dataset).enumerated().map { index, post in
            var post = post
            post.hours = Self.values[index % Self.values.count]
            post.timezone = "Europe/Berlin"
            return post
        }
        let queries = try DatasetQuery.load(dataset)
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue", "geo"])
        defer { stack.stop() }
        let token = try stack.register("hours-bench@example.org").accessToken
        let geoEndpoint = stack.endpoint("geo")
        print("hours: importing \(posts.count) posts with opening hours through catalogue")
        let (imported, searchable) = try DatasetImport.runUntilSearchable(posts, token: token, catalogue: stack.endpoint("catalogue"),
                                                                          geo: geoEndpoint)
        let resident = stack.residentBytes("geo") ?? 0

        let plain = queries.map { $0.searchFrame(highlight: true, at: Self.at) }
        let open = queries.map { $0.searchFrame(highlight: true, openNow: true, at: Self.at) }
        let okPrefix = Data(#""ok":true"#.utf8)
        let count = queries.count
        var ratios: [Double] = [], rows = ""
        var rates: [Bool: [Double]] = [:]
        print("hours: measuring")
        for pair in 0..<6 {
            var pairRates: [Bool: Double] = [:]
            for openNow in pair % 2 == 0 ? [false, true] : [true, false] {
                let frames = openNow ? open : plain
                let result = LoadGenerator.run(endpoint: geoEndpoint, clients: 4, seconds: seconds,
                                               request: { client, sequence in [frames[(client * count / 4 + sequence) % count]] },
                                               check: { $0.range(of: okPrefix) != nil })
                pairRates[openNow] = result.rate
                rates[openNow, default: []].append(result.rate)
            }
            let ratio = pairRates[true]! / pairRates[false]!
            ratios.append(ratio)
            rows += "| \(pair + 1) | \(format(pairRates[false]!)) | \(format(pairRates[true]!)) | \(format(ratio * 100, 1)) % |\n"
        }
        let ratio = Statistics.median(ratios)
        let log = try report.record("hours", columns: ["search q/s", "openNow q/s", "openNow / search", "import s", "RSS MB"],
                                    values: [Statistics.median(rates[false]!), Statistics.median(rates[true]!), ratio,
                                             imported.seconds, Double(resident) / 1_000_000], digits: 3)
        return """
        ## Opening hours: openNow filtering

        \(Machine.measured(with: "`hereabouts-bench all --only hours --dataset bench-data`"))
        **Data.** The \(posts.count) posts of `../shared/bench/gen_dataset.py`, each given one of \(Self.values.count) opening hours in
        turn (zone Europe/Berlin): \(Self.values.map { "`\($0)`" }.joined(separator: ", ")). A quarter
        depend on the place (`PH`, the sun): geo keeps those per point rounded to 0.01°. Imported through catalogue in
        \(format(imported.seconds, 1)) s (searchable after \(searchable.map { format($0, 1) } ?? "–") s); geo's RSS then
        \(format(Double(resident) / 1_000_000)) MB.

        **Throughput.** The dataset's \(queries.count) queries as `geo.search` (top 20, highlights, `at` \(Self.at), a Wednesday
        noon in Berlin), without and with `openNow`, 4 clients, \(format(seconds)) s each, six pairs whose order alternates.
        Every hit carries its `openStatus`, `nextChange` and `hoursComment` on both sides.

        | pair | search q/s | with openNow q/s | openNow / search |
        |---|---|---|---|
        \(rows)
        | target | this run | every run of this build |
        |---|---|---|
        | geo.search with openNow ≥ 95 % of without | \(format(ratio * 100, 1)) % (median of the pairs' ratios) | \(log.headline(2, unit: " ×", digits: 3)): \(log.median(2) >= 0.95 ? "met" : "not met") |
        """
    }
}
