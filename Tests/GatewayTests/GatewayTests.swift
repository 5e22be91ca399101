import Contracts
import Foundation
@testable import Gateway
import StackClient
import TestThreads
import Testing
import Wire

@Suite("here's pieces", .ownThread)
struct GatewayTests {
    @Test("an iCalendar event: CRLF, all-day dates with an exclusive end, escaped text, lines folded at 75 octets")
    func icalendar() throws {
        let event = ICalendarEvent(uid: "trip1@hereabouts", stamp: Date(timeIntervalSince1970: 1_795_000_000),
                                   firstDay: try #require(LocalDate("2026-12-30")), lastDay: try #require(LocalDate("2026-12-31")),
                                   summary: "Köln; Dom, Rhein \\ Karneval\nNew line " + String(repeating: "é", count: 40),
                                   location: "Köln, DE", geo: (50.93333, 6.95))
        let text = event.text
        #expect(text.hasPrefix("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n"))
        #expect(text.hasSuffix("END:VEVENT\r\nEND:VCALENDAR\r\n"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        #expect(text.contains("DTSTART;VALUE=DATE:20261230\r\n"))
        #expect(text.contains("DTEND;VALUE=DATE:20270101\r\n"))  // the day after the last, across a year
        #expect(text.contains("UID:trip1@hereabouts\r\n") && text.contains("DTSTAMP:20261118T"))
        #expect(text.contains("LOCATION:Köln\\, DE\r\n") && text.contains("GEO:50.93333;6.95\r\n"))
        // Unfolded, the summary reads back escaped exactly.
        let unfolded = text.replacingOccurrences(of: "\r\n ", with: "")
        #expect(unfolded.contains("SUMMARY:Köln\\; Dom\\, Rhein \\\\ Karneval\\nNew line " + String(repeating: "é", count: 40) + "\r\n"))
        // Each physical line fits 75 octets (folding split no character: the unfolded text above reads whole).
        for line in text.components(separatedBy: "\r\n") { #expect(line.utf8.count <= 75, "\(line)") }
    }

    @Test("highlights print bold where asked (ranges in UTF-16, emoji and combining marks too), plain otherwise; tables align on what shows")
    func highlightedTitles() {
        let title = "Kölsch & Burger 🍔 Bar"
        let ranges = [TextRange(start: 9, length: 6), TextRange(start: 19, length: 3)]
        #expect(Output.highlighted(title, ranges, styled: true) == "Kölsch & \u{1B}[1mBurger\u{1B}[22m 🍔 \u{1B}[1mBar\u{1B}[22m")
        #expect(Output.highlighted(title, ranges, styled: false) == title)
        #expect(Output.highlighted("Ko\u{308}lle", [TextRange(start: 0, length: 6)], styled: true) == "\u{1B}[1mKo\u{308}lle\u{1B}[22m")
        // A range that does not fit the title leaves it as it is.
        #expect(Output.highlighted("Bar", [TextRange(start: 2, length: 5)], styled: true) == "Bar")
        #expect(Output.visibleWidth(Output.highlighted(title, ranges, styled: true)) == title.count)
        #expect(LanguageArgument.tag(flag: nil, environment: ["LANG": "de_AT.UTF-8"]) == "de-at")
        #expect(LanguageArgument.tag(flag: nil, environment: ["LANG": "fr_FR.UTF-8", "LC_MESSAGES": "nl_BE@euro"]) == "nl-be")
        #expect(LanguageArgument.tag(flag: nil, environment: ["LANG": "fr_FR.UTF-8", "LC_ALL": "C.UTF-8"]) == nil)
        #expect(LanguageArgument.tag(flag: "pt-BR", environment: ["LC_ALL": "de_DE.UTF-8"]) == "pt-BR")
        #expect(LanguageArgument.tag(flag: nil, environment: ["LC_ALL": "", "LANG": "es_ES"]) == "es-es")
    }

    @Test("points, distances and their printing")
    func arguments() throws {
        #expect(PointArgument("52.09,5.12") == .coordinates(lat: 52.09, lon: 5.12))
        #expect(PointArgument("-33.9, 151.2") == .coordinates(lat: -33.9, lon: 151.2))
        #expect(PointArgument("Den Haag") == .place("Den Haag"))
        #expect(PointArgument("Washington, DC") == .place("Washington, DC"))
        #expect(try DistanceArgument.metres("5km") == 5_000)
        #expect(try DistanceArgument.metres("2.5 km") == 2_500)
        #expect(try DistanceArgument.metres("500m") == 500)
        #expect(try DistanceArgument.metres("750") == 750)
        for bad in ["far", "-5km", "0", "km"] { #expect(throws: GatewayError.self) { try DistanceArgument.metres(bad) } }
        #expect(Output.distance(849.6) == "850 m")
        #expect(Output.distance(4_230) == "4.2 km")
        #expect(Output.distance(123_400) == "123 km")
    }

    @Test("the session file is private, survives a reload, and is replaced whole; errors keep the last 50")
    func files() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("here-\(Identifier.random(count: 8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["XDG_CONFIG_HOME": directory.path]
        let file = SessionFile(environment: environment)
        #expect(file.load() == nil)
        let session = Session(userId: "u1", anonymous: false, accessToken: "a", refreshToken: "r", expiresAt: Date(timeIntervalSince1970: 100))
        try file.save(session)
        try file.save(Session(userId: "u2", anonymous: true, accessToken: "b", refreshToken: "s", expiresAt: Date(timeIntervalSince1970: 200)))
        #expect(file.load()?.userId == "u2")
        #expect(try FileManager.default.attributesOfItem(atPath: file.url.path)[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: file.url.deletingLastPathComponent().path) == ["session.json"])
        file.remove()
        #expect(file.load() == nil)

        let log = ErrorLog(environment: environment)
        for index in 0..<55 { log.record(command: "search \(index)", GatewayError("oops \(index)")) }
        let entries = log.entries()
        #expect(entries.count == 50 && entries.first?.command == "search 5" && entries.last?.message == "oops 54")
    }

    @Test("service errors map to exit codes: the user's mistake 1, unavailable 2, internal 3")
    func exitCodes() {
        #expect(GatewayError.from(ServiceError.invalidArgument(field: "q", "too long")).exitCode == 1)
        #expect(GatewayError.from(ServiceError.invalidArgument(field: "q", "too long")).message == "invalid_argument (q): too long")
        #expect(GatewayError.from(ServiceError.notFound("no post")).exitCode == 1)
        #expect(GatewayError.from(ServiceError.unavailable("down")).exitCode == 2)
        #expect(GatewayError.from(ServiceError(code: .internal, message: "bug")).exitCode == 3)
    }
}

@Suite("here probe's target")
struct ProbeTargetTests {
    @Test("a container's main process is reached over loopback at the port of its own flags, else of the environment")
    func targets() throws {
        let environment = ["HEREABOUTS_GEO_ENDPOINT": "tcp://geo:7113,tcp://geo-1:7113", "HEREABOUTS_EDGE_LISTEN": "edge:9090"]
        #expect(try ProbeTarget.from(commandLine: ["/usr/local/bin/geo-service", "--replica", "1", "--endpoint", "tcp://0.0.0.0:7103"],
                                     environment: environment) == .service(name: "geo", endpoint: "tcp://127.0.0.1:7103"))
        #expect(try ProbeTarget.from(commandLine: ["auth-service", "--endpoint=tcp://[::]:7201"], environment: [:])
                == .service(name: "auth", endpoint: "tcp://127.0.0.1:7201"))
        #expect(try ProbeTarget.from(commandLine: ["geo-service"], environment: environment)
                == .service(name: "geo", endpoint: "tcp://127.0.0.1:7113"))
        #expect(try ProbeTarget.from(commandLine: ["favourites-service"], environment: [:])
                == .service(name: "favourites", endpoint: "tcp://127.0.0.1:7104"))
        #expect(try ProbeTarget.from(commandLine: ["edge-service", "--listen", "0.0.0.0:8080"], environment: environment)
                == .edge(address: "127.0.0.1:8080"))
        #expect(try ProbeTarget.from(commandLine: ["edge-service"], environment: environment) == .edge(address: "127.0.0.1:9090"))
        #expect(throws: GatewayError.self) { try ProbeTarget.from(commandLine: ["bash"], environment: [:]) }
        #expect(throws: GatewayError.self) { try ProbeTarget.from(commandLine: ["mail-service"], environment: [:]) }
        #expect(throws: GatewayError.self) { try ProbeTarget.from(commandLine: ["auth-service", "--endpoint", "tcp://x:0"], environment: [:]) }
        #expect(throws: GatewayError.self) { try ProbeTarget.from(commandLine: [], environment: [:]) }
    }
}
