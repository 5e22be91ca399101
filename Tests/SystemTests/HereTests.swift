import Contracts
import EdgeFixtures
import Foundation
import ServiceKitTesting
import Spawn
import TestThreads
import Testing
import Wire

/// Runs `here` (or `executable`, such as script(1) running it) once: its exit status and what it printed.
func here(_ arguments: [String], environment: [String: String], stdin: String? = nil,
                  executable: String? = nil) throws -> (status: Int32, out: String, err: String) {
    let out = Pipe(), err = Pipe(), input = Pipe()
    let process = try SpawnedProcess(executable ?? ChildProcess.binDirectory.appendingPathComponent("here").path, arguments: arguments,
                                     environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                     stdin: .pipe(input), stdout: .pipe(out), stderr: .pipe(err))
    if let stdin { input.fileHandleForWriting.write(Data((stdin + "\n").utf8)) }
    try input.fileHandleForWriting.close()
    let output = out.fileHandleForReading.readDataToEndOfFile(), errors = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
}

@Suite("The here gateway", .serialized, .ownThread)
struct HereTests {
    @Test("here up starts and supervises the five services; status, call, accounts, places and search work through it; Ctrl-C stops all")
    func upAndFlows() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-here-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The data directory in the environment, as a user's shell has it by default: `here up` makes its CURVE
        // keys there, and every other command finds them there.
        var environment = ["XDG_CONFIG_HOME": directory.appendingPathComponent("config").path, "HEREABOUTS_LOG_LEVEL": "warning",
                           "HEREABOUTS_BIN_DIR": ChildProcess.binDirectory.path,
                           "HEREABOUTS_DATA_DIR": directory.appendingPathComponent("data").path,
                           // Names as a shell without a language gets them, whatever this machine's locale.
                           "LANG": "C.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""].merging(ChildProcess.testSettings) { $1 }
        for service in ServiceEndpoints.services {
            environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        let edgePort = try EdgeStack.freePort()
        environment["HEREABOUTS_EDGE_LISTEN"] = "127.0.0.1:\(edgePort)"
        // Nothing runs yet: status says so with exit code 2.
        #expect(try here(["status"], environment: environment).status == 2)

        let up = try ChildProcess("here", arguments: ["up", "--demo"],
                                  environment: environment, log: directory.appendingPathComponent("up.log"))
        defer { up.terminate() }
        func logContains(_ text: String, within seconds: Double = 60) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if up.logText.contains(text) { return true }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return false
        }
        // Seeding the demo registers seven accounts (scrypt, ~0.4 s each) after the
        // services are up: with the other system tests running beside it, minutes.
        try #require(logContains("all services ready", within: 240), "\(up.logText)")
        #expect(up.logText.split(separator: "\n").filter { $0.contains("  ready  v") }.count == 5)

        #expect(up.logText.contains("demo data: "), "\(up.logText)")
        #expect(up.logText.contains("(CurveZMQ, keys in "), "\(up.logText)")
        #expect(up.logText.contains("apps and browsers: http://127.0.0.1:\(edgePort)"), "\(up.logText)")
        let status = try here(["status", "--json"], environment: environment)
        #expect(status.status == 0, "\(status.err)")
        // The five services and the edge, each answering and ready.
        let rows = try JSONParser.parse(Data(status.out.utf8))
        guard case .array(let entries) = rows else { throw ServiceError.badRequest("status --json: \(status.out)") }
        #expect(entries.count == 6 && entries.allSatisfy { $0.objectValue?["status"] == .string("ok") }, "\(status.out)")
        #expect(entries.allSatisfy { $0.objectValue?["ready"]?.objectValue?["ready"] == .bool(true) }, "\(status.out)")
        // Each service's storage: free bytes on its disk, and its file.
        #expect(entries.dropLast().allSatisfy { entry in
            let storage = entry.objectValue?["storage"]?.objectValue
            return (storage?["freeBytes"]?.doubleValue ?? 0) > 0 && (storage?["fileBytes"]?.doubleValue ?? 0) > 0
        }, "\(status.out)")
        let table = try here(["status"], environment: environment).out
        #expect(table.contains(" (file "))
        // What auth and chat send: their outboxes, in the table and in full in the JSON.
        #expect(table.contains("mail: 0 waiting") && table.contains("push: 0 waiting"), "\(table)")
        let outboxes = entries.compactMap(\.objectValue).filter { $0["mail"] != nil || $0["push"] != nil }.map { $0["service"] }
        #expect(outboxes == [.string("auth"), .string("chat")], "\(status.out)")
        let edgeRow = try #require(entries.last?.objectValue)
        #expect(edgeRow["service"] == .string("edge") && edgeRow["endpoint"] == .string("http://127.0.0.1:\(edgePort)"), "\(status.out)")

        // Accounts: anonymous, then registered (the same user), whoami; the session file is private.
        let anon = try here(["anon", "--json"], environment: environment)
        let anonymousId = try JSONValueDecoder().decode(SessionReply.self, from: Data(anon.out.utf8)).user.id
        let registered = try here(["register", "--email", "ann@example.org", "--password-stdin", "--display-name", "Ann", "--json"],
                                  environment: environment, stdin: "correct horse")
        #expect(registered.status == 0, "\(registered.err)")
        #expect(try JSONValueDecoder().decode(SessionReply.self, from: Data(registered.out.utf8)).user.id == anonymousId)
        #expect(try here(["whoami"], environment: environment).out.contains("Ann <ann@example.org>"))
        let sessionFile = directory.appendingPathComponent("config/hereabouts/session.json").path
        let mode = try FileManager.default.attributesOfItem(atPath: sessionFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Places, countries, a raw call, a search around a named place.
        #expect(try here(["place", "koln"], environment: environment).out.contains("Köln"))
        #expect(try here(["country", "nl"], environment: environment).out.contains("🇳🇱 Netherlands (NL), Europe"))
        // Names in the language of --lang, else LC_ALL, LC_MESSAGES or LANG.
        func localized(_ arguments: [String], _ locale: [String: String]) throws -> String {
            try here(arguments, environment: environment.merging(locale) { $1 }).out
        }
        #expect(try localized(["country", "nl", "--lang", "de"], [:]).contains("🇳🇱 Niederlande (NL), Europa"))
        #expect(try localized(["country", "nl"], ["LANG": "fr_FR.UTF-8"]).contains("Pays-Bas"))
        #expect(try localized(["country", "nl"], ["LANG": "fr_FR.UTF-8", "LC_ALL": "de_AT.UTF-8"]).contains("Niederlande"))
        #expect(try localized(["place", "koln"], ["LANG": "en_GB.UTF-8"]).contains("Cologne"))
        #expect(try localized(["country", "nl", "--lang", "en-u-nope!"], [:]).isEmpty)
        let call = try here(["call", "geo.places.reverse", #"{"lat":52.09,"lon":5.12}"#], environment: environment)
        #expect(call.status == 0 && call.out.contains("\"name\":\"Utrecht\""))
        let search = try here(["search", "coffee", "--near", "Utrecht", "--radius", "2km"], environment: environment)
        #expect(search.status == 0 && search.out.contains("of Utrecht (NL)"), "\(search.err)")
        // The words that matched are bold on a terminal (here under script(1)'s), plain in a pipe or with NO_COLOR.
        let bikes = ["search", "bike", "--near", "Utrecht", "--radius", "2km"]
        let bold = "City \u{1B}[1mbike\u{1B}[22m, blue, 3 gears"
        #expect(try here(bikes, environment: environment).out.contains("City bike, blue, 3 gears"))
        let command = ([ChildProcess.binDirectory.appendingPathComponent("here").path] + bikes).joined(separator: " ")
        // (`swift test` may set NO_COLOR for what it starts; empty is unset, as no-color.org says.)
        let onTerminal = try here(["-qec", command, "/dev/null"], environment: environment.merging(["NO_COLOR": ""]) { $1 },
                                  executable: "/usr/bin/script")
        #expect(onTerminal.out.contains(bold), "\(onTerminal.out)")
        let noColor = try here(["-qec", command, "/dev/null"], environment: environment.merging(["NO_COLOR": "1"]) { $1 },
                               executable: "/usr/bin/script")
        #expect(noColor.out.contains("City bike, blue, 3 gears") && !noColor.out.contains("\u{1B}[1m"), "\(noColor.out)")
        // The user's mistakes exit 1 with the protocol's words.
        let nowhere = try here(["search", "--near", "Qxqzzv"], environment: environment)
        #expect(nowhere.status == 1 && nowhere.err.contains("not_found (place)"))
        #expect(try here(["call", "geo.search", "[1]"], environment: environment).status == 1)
        let errors = try here(["errors"], environment: environment).out
        #expect(errors.contains("here search --near Qxqzzv") && errors.contains("not_found (place)"), "\(errors)")

        // A provider's post: created at a named place (city, country and time zone filled in), listed, shown, rated.
        let created = try here(["post", "create", "--kind", "restaurant", "--title", "Burger Bar", "--at", "Utrecht",
                                "--hours", "Mon-Sun 00:00-24:00", "--tags", "burger,late", "--price", "12.50 EUR", "--notify-radius", "200",
                                "--json"], environment: environment)
        #expect(created.status == 0, "\(created.err)")
        let post = try JSONValueDecoder().decode(PostReply.self, from: Data(created.out.utf8)).post
        #expect(post.place == PostPlace(city: "Utrecht", countryCode: "NL") && post.timezone == "Europe/Amsterdam")
        #expect(try here(["post", "list", "--mine"], environment: environment).out.contains("1 post of yours"))
        // The demo's divers by the Zeeland coast.
        var zeeland = ""
        for _ in 0..<50 where !zeeland.contains("AOWD") {
            zeeland = try here(["divers", "near", "Vlissingen", "--radius", "20km"], environment: environment).out
            if !zeeland.contains("AOWD") { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(zeeland.contains("Ann") && zeeland.contains("certification=AOWD"), "\(zeeland)")
        #expect(try here(["profile", "set", "--phone", "+31 6 1234 5678", "--show-email"], environment: environment).status == 0)
        let shown = try here(["post", "show", post.id], environment: environment).out
        #expect(shown.contains("Burger Bar") && shown.contains("open now") && shown.contains("ann@example.org"))
        #expect(shown.contains("read as Mo-Su 00:00-24:00"), "the hours' standard spelling beside the tolerant form: \(shown)")
        #expect(try here(["rate", post.id, "4"], environment: environment).status == 0)

        // A second user (their own session file): saves it, finds Ann near Utrecht, chats, walks into the fence.
        var bea = environment
        bea["XDG_CONFIG_HOME"] = directory.appendingPathComponent("config-bea").path
        #expect(try here(["register", "--email", "bea@example.org", "--password-stdin", "--display-name", "Bea"], environment: bea,
                         stdin: "correct horse").status == 0)
        #expect(try here(["location", "set", "Utrecht"], environment: bea).status == 0)
        #expect(try here(["location", "set", "52.1,5.12", "--discoverable"], environment: environment).status == 0)
        var saved = (status: Int32(1), out: "", err: "")
        for _ in 0..<50 where saved.status != 0 {
            saved = try here(["fav", "add", post.id], environment: bea)
            if saved.status != 0 { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(saved.out.contains("1 in your list"), "\(saved.err)")
        let favourites = try here(["fav", "list"], environment: bea).out
        #expect(favourites.contains("Burger Bar") && favourites.contains("ann@example.org"))
        let divers = try here(["divers", "near", "Utrecht", "--radius", "10km"], environment: bea).out
        #expect(divers.contains("Ann") && divers.contains("≤ "), "\(divers)")
        let annId = try JSONValueDecoder().decode(SessionReply.self, from: Data(registered.out.utf8)).user.id
        #expect(try here(["chat", "send", annId, "Burger", "tonight?"], environment: bea).status == 0)
        let chats = try here(["chat", "list"], environment: environment).out
        #expect(chats.contains("Bea") && chats.contains("Burger tonight?") && chats.contains("  1  "), "\(chats)")
        let conversation = try #require(chats.split(separator: "\n").last?.split(separator: " ").last.map(String.init))
        #expect(try here(["chat", "show", conversation], environment: environment).out.contains("Burger tonight?"))
        #expect(try here(["chat", "list", "--json"], environment: environment).out.contains("\"unread\":0"))
        let beaProfile = try JSONValueDecoder().decode(UserReply.self, from: Data(try here(["whoami", "--json"], environment: bea).out.utf8))
        #expect(try here(["chat", "send", beaProfile.user.id, "Yes, at eight"], environment: environment).status == 0)
        let beaChats = try JSONValueDecoder().decode(ConversationsReply.self, from: Data(try here(["chat", "list", "--json"], environment: bea).out.utf8))
        #expect(beaChats.conversations.first?.unread == 1 && beaChats.conversations.first?.lastMessage?.text == "Yes, at eight")
        let fence = try here(["fence", "check", "--at", "\(post.lat),\(post.lon)"], environment: bea).out
        #expect(fence.contains("entered \(post.id)"), "\(fence)")
        #expect(try here(["fence", "plan", "--at", "Utrecht"], environment: bea).out.contains(post.id))

        // A trip to Köln with a tip there, a buddy invited by email, and its calendar file.
        let trip = try here(["trip", "create", "--to", "Koln", "--from", "2026-12-30", "--until", "2026-12-31", "--json"], environment: environment)
        let tripId = try JSONValueDecoder().decode(TripReply.self, from: Data(trip.out.utf8)).trip.id
        #expect(try here(["tip", "add", "--city", "Köln", "--category", "cafe", "--name", "Café Reichard", "--text", "by the Dom"],
                         environment: environment).status == 0)
        #expect(try here(["trip", "invite", tripId, "bea@example.org"], environment: environment).status == 0)
        let invitation = try here(["trip", "list"], environment: bea).out
        #expect(invitation.contains("invited (here trip accept \(tripId))"), "\(invitation)")
        #expect(try here(["trip", "show", tripId], environment: bea).out.contains("Bea (invited, not yet joined)"))
        #expect(try here(["trip", "accept", tripId], environment: bea).out.contains("Joined"))
        let tripShown = try here(["trip", "show", tripId], environment: bea).out
        #expect(tripShown.contains("🇩🇪 Germany") && tripShown.contains("cafe:") && tripShown.contains("Café Reichard")
                && tripShown.contains("Bea (member)"), "\(tripShown)")
        let ics = directory.appendingPathComponent("trip.ics")
        #expect(try here(["trip", "ics", tripId, "-o", ics.path], environment: environment).status == 0)
        let calendar = try String(contentsOf: ics, encoding: .utf8)
        #expect(calendar.contains("DTSTART;VALUE=DATE:20261230\r\n") && calendar.contains("DTEND;VALUE=DATE:20270101\r\n")
                && calendar.contains("UID:\(tripId)@hereabouts"))

        // Editing, photos, a feed import with pruning, a map box.
        #expect(try here(["post", "edit", post.id, "--title", "Burger Bar & Grill", "--clear-hours"], environment: environment).status == 0)
        let photo = directory.appendingPathComponent("photo.png")
        try TestImages.png(width: 4, height: 3).write(to: photo)
        let withPhoto = try here(["post", "create", "--kind", "offer", "--title", "Lamp", "--at", "52.09,5.12", "--image", photo.path,
                                  "--image", photo.path, "--json"], environment: environment)
        #expect(try JSONValueDecoder().decode(PostReply.self, from: Data(withPhoto.out.utf8)).post.images.count == 2, "\(withPhoto.err)")
        let added = try here(["post", "image", "add", post.id, photo.path, "--json"], environment: environment)
        let image = try JSONValueDecoder().decode(ImageReply.self, from: Data(added.out.utf8)).image
        #expect(image.width == 4 && image.height == 3 && image.contentType == "image/png", "\(added.err)")
        let copy = directory.appendingPathComponent("copy.png")
        #expect(try here(["post", "image", "get", image.id, "-o", copy.path], environment: bea).status == 0)
        #expect(try Data(contentsOf: copy) == (try Data(contentsOf: photo)))
        #expect(try here(["post", "image", "rm", image.id], environment: environment).status == 0)
        let feed = directory.appendingPathComponent("feed.json")
        try Data(#"{"posts":[{"kind":"restaurant","title":"Pho 1","lat":52.08,"lon":5.11,"ref":"pho-1"},{"kind":"restaurant","title":"Pho 2","lat":52.081,"lon":5.111,"ref":"pho-2"}]}"#.utf8).write(to: feed)
        let imported = try here(["post", "import", feed.path], environment: environment)
        #expect(imported.out.contains("2 created"), "\(imported.err)")
        try Data(#"[{"kind":"restaurant","title":"Pho 1","lat":52.08,"lon":5.11,"ref":"pho-1"}]"#.utf8).write(to: feed)
        let pruned = try here(["post", "import", feed.path, "--prune", "--json"], environment: environment).out
        #expect(pruned.contains("\"deleted\":1") && pruned.contains("\"unchanged\":1"), "\(pruned)")
        #expect(try here(["post", "list", "--mine"], environment: environment).out.contains("4 posts of yours"))  // bar, tip, lamp, pho 1
        var boxed = ""
        for _ in 0..<50 where !boxed.contains("Pho 1") {
            boxed = try here(["within", "52.0,5.0,52.2,5.2"], environment: bea).out
            if !boxed.contains("Pho 1") { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(boxed.contains("Pho 1") && boxed.contains("Burger Bar & Grill") && !boxed.contains("Pho 2"))

        // Blocks, a password change, and an account deleted for good.
        let beaId = beaProfile.user.id
        #expect(try here(["chat", "block", beaId], environment: environment).status == 0)
        let blocked = try here(["chat", "send", annId, "hello?"], environment: bea)
        #expect(blocked.status == 1 && blocked.err.contains("permission_denied"))
        #expect(try here(["password", "change", "--password-stdin"], environment: bea, stdin: "correct horse\nbattery staple").status == 0)
        #expect(try here(["login", "bea@example.org", "--password-stdin"], environment: bea, stdin: "battery staple").status == 0)
        // Account mail with no relay: auth keeps each message in <data dir>/mail, here mail shows their links.
        func mailedLink(to address: String, _ path: String) throws -> String? {
            for _ in 0..<100 {
                let listed = try JSONParser.parse(Data(try here(["mail", "--to", address, "--json"], environment: bea).out.utf8))
                if let link = listed.arrayValue?.compactMap({ $0.objectValue?["links"]?.arrayValue?.first?.stringValue })
                    .first(where: { $0.contains(path) }) { return link }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return nil
        }
        let confirmation = try #require(try mailedLink(to: "bea@example.org", "/email/verify"))
        #expect(confirmation.hasPrefix("http://127.0.0.1:\(edgePort)/email/verify?token="), "\(confirmation)")
        let verified = try here(["account", "verify", confirmation], environment: bea)
        #expect(verified.status == 0 && verified.out == "bea@example.org confirmed\n", "\(verified)")
        #expect(try here(["account", "verify", confirmation], environment: bea).status == 1)
        #expect(try here(["password", "forgot", "bea@example.org"], environment: bea).status == 0)
        let resetLink = try #require(try mailedLink(to: "bea@example.org", "/password/reset"))
        let reset = try here(["password", "reset", resetLink, "--password-stdin"], environment: bea, stdin: "battery staple 2")
        #expect(reset.status == 0 && reset.out.contains("every other session has ended"), "\(reset)")
        #expect(try here(["mail", "--to", "bea@example.org"], environment: bea).out.contains("Reset your Hereabouts password"))
        // The operator (here holds the stack's operator key) vouches for an address without its link.
        #expect(try here(["account", "confirm", "ann@example.org"], environment: environment).out == "ann@example.org confirmed\n")
        #expect(try here(["account", "delete", "--password-stdin"], environment: bea, stdin: "battery staple 2").status == 0)
        #expect(try here(["whoami"], environment: bea).status == 1)

        // Restaurant finder: a feed imported, sorted by name, open at a fixed instant (a Monday noon in Amsterdam).
        try Data(#"""
            [{"kind":"restaurant","title":"Zuid Pizza","lat":52.3,"lon":4.9,"hours":"Mo-Fr 11:00-14:00","timezone":"Europe/Amsterdam","ref":"z"},
             {"kind":"restaurant","title":"Anker Diner","lat":52.301,"lon":4.901,"hours":"Sa-Su 10:00-22:00","timezone":"Europe/Amsterdam","ref":"a"},
             {"kind":"restaurant","title":"Midden Cafe","lat":52.302,"lon":4.902,"hours":"24/7","timezone":"Europe/Amsterdam","ref":"m"}]
            """#.utf8).write(to: feed)
        #expect(try here(["post", "import", feed.path], environment: environment).out.contains("3 created"))
        func titles(_ arguments: [String]) throws -> [String] {
            for _ in 0..<50 {
                let reply = try here(["search", "--near", "52.3,4.9", "--radius", "1km", "--kind", "restaurant", "--json"] + arguments,
                                     environment: environment)
                let hits = try JSONValueDecoder().decode(SearchReply.self, from: Data(reply.out.utf8)).hits.map(\.title)
                if hits.count == 3 || arguments.contains("--open-now") { return hits }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return []
        }
        #expect(try titles(["--sort", "name"]) == ["Anker Diner", "Midden Cafe", "Zuid Pizza"])
        #expect(try titles(["--sort", "name-desc"]) == ["Zuid Pizza", "Midden Cafe", "Anker Diner"])
        #expect(try titles(["--open-now", "--time", "2026-11-23T11:00:00Z", "--sort", "name"]) == ["Midden Cafe", "Zuid Pizza"])
        #expect(try here(["search", "--near", "52.3,4.9", "--time", "tomorrow"], environment: environment).status == 1)
        #expect(try here(["errors"], environment: environment).out.contains("--time tomorrow"))

        // Tour guide: the ten nearest sights (the demo's walk), walk into a fence and out again, rate a sight.
        let nearest = try JSONValueDecoder().decode(HitsReply.self, from: Data(try here(
            ["nearest", "--near", "52.0908,5.1213", "-k", "10", "--kind", "sight", "--json"], environment: environment).out.utf8)).hits
        #expect(nearest.first?.title == "Dom Tower" && nearest.map(\.distance!) == nearest.map(\.distance!).sorted())
        let dom = try #require(nearest.first)
        #expect(try here(["fence", "check", "--at", "52.0908,5.1213"], environment: environment).out.contains("entered \(dom.id)"))
        #expect(try here(["fence", "check", "--at", "52.1000,5.1213"], environment: environment).out.contains("left \(dom.id)"))
        #expect(try here(["rate", dom.id, "5"], environment: environment).status == 0)

        // Travel: the calendar parsed back, lines unfolded and text unescaped.
        let unfolded = calendar.replacingOccurrences(of: "\r\n ", with: "").components(separatedBy: "\r\n")
        let properties = Dictionary(unfolded.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]))
        }) { first, _ in first }
        #expect(properties["SUMMARY"] == "Köln" && properties["LOCATION"] == "Köln\\, DE" && properties["BEGIN"] == "VCALENDAR")

        // A service killed outright is back at once (favourites starts fastest), and the next call works.
        let favouritesLine = try #require(up.logText.split(separator: "\n").first { $0.hasPrefix("favourites ") })
        let pid = try #require(favouritesLine.split(separator: " ").last.flatMap { Int32($0) })
        // A container's health check: `here probe` finds the process's port from its own command line (or the
        // environment, as the process itself does) and asks it over loopback; a process that stops answering fails it.
        let probe = try here(["probe", "--pid", "\(pid)"], environment: environment)
        #expect(probe.status == 0 && probe.out.hasPrefix("favourites at tcp://127.0.0.1:"), "\(probe)")
        kill(pid, SIGSTOP)
        let stopped = try here(["probe", "--pid", "\(pid)", "--timeout", "1"], environment: environment)
        kill(pid, SIGCONT)
        #expect(stopped.status == 2 && stopped.err.contains("favourites does not answer"), "\(stopped)")
        #expect(try here(["probe", "--pid", "\(up.process.processIdentifier)"], environment: environment).status == 1)
        let killed = Date()
        kill(pid, SIGKILL)
        #expect(logContains("favourites restarted", within: 30), "\(up.logText)")
        var healthy = false
        for _ in 0..<200 where !healthy {
            healthy = try here(["status"], environment: environment).status == 0
            if !healthy { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(healthy)
        print("favourites answered again \(Date().timeIntervalSince(killed)) s after kill -9")
        #expect(up.logText.contains("favourites exited (status 137); restarting\n"))

        // The edge is supervised the same way.
        let edgePid = try #require(CrashTests.child(named: "edge-service", of: up.process.processIdentifier))
        let edgeProbe = try here(["probe", "--pid", "\(edgePid)"], environment: environment)
        #expect(edgeProbe.status == 0 && edgeProbe.out == "edge at 127.0.0.1:\(edgePort): ready\n", "\(edgeProbe)")
        kill(edgePid, SIGKILL)
        #expect(logContains("edge restarted", within: 30), "\(up.logText)")
        var edgeBack = false
        for _ in 0..<200 where !edgeBack {
            edgeBack = (try? EdgeClient(port: edgePort).get("/health/live"))?.status == 200
            if !edgeBack { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(edgeBack)

        // Ctrl-C: the edge and every service stop, then here.
        kill(up.process.processIdentifier, SIGINT)
        up.process.waitUntilExit()
        #expect(up.process.terminationStatus == 0, "\(up.logText)")
        for service in ServiceEndpoints.services + ["edge"] { #expect(up.logText.contains("\(service) stopped")) }
        #expect(try here(["status"], environment: environment).status == 2)
    }

    @Test("here up stopped during start-up (its edge cannot listen, so it is never ready) stops what it started, at once")
    func stopDuringStartUp() throws {
        // The edge exits at start, and is restarted, again and again.
        try Self.upWithEdgePortTaken { up, _ in
            let deadline = Date().addingTimeInterval(60)
            while !up.logText.contains("edge exited"), Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            try #require(up.logText.contains("edge exited"), "\(up.logText)")
            let children = ServiceEndpoints.services.compactMap { CrashTests.child(named: "\($0)-service", of: up.process.processIdentifier) }
            #expect(children.count == 5)

            let signalled = Date()
            kill(up.process.processIdentifier, SIGTERM)
            up.process.waitUntilExit()
            #expect(Date().timeIntervalSince(signalled) < 10, "\(up.logText)")
            #expect(up.process.terminationStatus == 0, "\(up.logText)")
            Thread.sleep(forTimeInterval: 0.5)
            #expect(children.allSatisfy { kill($0, 0) != 0 }, "a service outlived here up")
        }
    }

    @Test("here up whose edge never answers gives up after --start-timeout, stops the services, and prints why from the edge's log")
    func startTimeoutSaysWhy() throws {
        // The timeout is every child's: long enough for the services to start on a busy
        // machine (four times the cores' tests at once missed 4 s), the edge never answers.
        try Self.upWithEdgePortTaken(["--start-timeout", "10"]) { up, port in
            let deadline = Date().addingTimeInterval(90)
            while up.process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            try #require(!up.process.isRunning, "\(up.logText)")
            #expect(up.process.terminationStatus == 2, "\(up.logText)")
            // The edge's own words, not only where its log is.
            #expect(up.logText.contains("the edge did not answer at 127.0.0.1:\(port) within 10 s"), "\(up.logText)")
            #expect(up.logText.contains("it ends:") && up.logText.contains("Address already in use"), "\(up.logText)")
            for service in ServiceEndpoints.services { #expect(up.logText.contains("\(service) stopped"), "\(up.logText)") }
        }
    }

    /// Runs `here up --plaintext` (with `arguments`) in a fresh data directory, its
    /// services on free ports and its edge on a port this process holds, so that the
    /// edge can never listen; `body` gets it and the port, and it is stopped after.
    static func upWithEdgePortTaken(_ arguments: [String] = [], _ body: (ChildProcess, UInt16) throws -> Void) throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-here-taken-\(Identifier.random(count: 6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let held = try HeldPort()
        defer { held.release() }
        var environment = ["HEREABOUTS_DATA_DIR": directory.path, "HEREABOUTS_LOG_LEVEL": "warning",
                           "HEREABOUTS_BIN_DIR": ChildProcess.binDirectory.path, "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path]
        for service in ServiceEndpoints.services {
            environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        let up = try ChildProcess("here", arguments: ["up", "--plaintext"] + arguments + ["--http", "127.0.0.1:\(held.port)"],
                                  environment: environment, log: directory.appendingPathComponent("up.log"))
        defer { up.terminate() }
        try body(up, held.port)
    }

    @Test("here search --watch lists the results, then prints each post that enters, changes and leaves; Ctrl-C closes the watch")
    func searchWatch() throws {
        let stack = try EdgeStack("here-watch")
        #expect(try here(["anon"], environment: stack.environment).status == 0)
        let seller = stack.client.signed(try stack.register("bikes@example.org").accessToken)
        let watcher = try ChildProcess("here", arguments: ["search", "bike", "--near", "52.0907,5.1214", "--radius", "2km", "--watch"],
                                       environment: stack.environment, log: stack.directory.appendingPathComponent("watch.log"))
        func logShows(_ text: String) -> Bool { watcher.logShows(text) }
        try #require(logShows("watching for changes"), "\(watcher.logText)")
        #expect(watcher.logText.contains("0 within 2.0 km of 52.0907,5.1214"), "\(watcher.logText)")

        let created = try seller.post("/v1/posts", ["kind": "offer", "title": "City bike", "lat": 52.092, "lon": 5.12])
        let id = try created.decode(PostReply.self).post.id
        #expect(logShows("+  "), "\(watcher.logText)")
        #expect(watcher.logText.contains("City bike") && watcher.logText.contains(id), "\(watcher.logText)")
        _ = try seller.patch("/v1/posts/\(id)", ["title": "City bike, blue"])
        #expect(logShows("~  "), "\(watcher.logText)")
        _ = try seller.delete("/v1/posts/\(id)")
        #expect(logShows("- \(id)"), "\(watcher.logText)")

        kill(watcher.process.processIdentifier, SIGINT)
        watcher.process.waitUntilExit()
        #expect(watcher.process.terminationStatus == 0, "\(watcher.logText)")
        // Its watch is closed: geo holds none.
        let stats = try here(["call", "geo.stats", "{}"], environment: stack.environment)
        #expect(stats.status == 0 && stats.out.contains("\"watches\":0"), "\(stats.out) \(stats.err)")
    }

    @Test("here divers near --watch lists the divers, then prints one who comes near, moves further and hides")
    func diversWatch() throws {
        let stack = try EdgeStack("here-divers-watch")
        #expect(try here(["anon"], environment: stack.environment).status == 0)
        let session = try stack.register("ann@example.org", displayName: "Ann")
        let ann = stack.client.signed(session.accessToken)
        _ = try ann.patch("/v1/me", ["attributes": ["certification": "AOWD"]])
        let watcher = try ChildProcess("here", arguments: ["divers", "near", "51.4988,3.6136", "--radius", "30km", "--attr", "certification=AOWD",
                                                           "--watch"],
                                       environment: stack.environment, log: stack.directory.appendingPathComponent("watch.log"))
        func logShows(_ text: String) -> Bool { watcher.logShows(text) }
        try #require(logShows("watching for changes"), "\(watcher.logText)")
        #expect(watcher.logText.contains("0 near 51.4988,3.6136"), "\(watcher.logText)")

        _ = try ann.put("/v1/me/location", ["lat": 51.45, "lon": 3.58, "discoverable": true])  // Vlissingen
        #expect(logShows("+  ≤ 6.0 km  Ann  certification=AOWD"), "\(watcher.logText)")
        _ = try ann.put("/v1/me/location", ["lat": 51.54, "lon": 3.44, "discoverable": true])  // Domburg
        #expect(logShows("~  ≤ 13"), "\(watcher.logText)")
        _ = try ann.put("/v1/me/location", ["lat": 51.54, "lon": 3.44, "discoverable": false])
        #expect(logShows("- \(session.user.id)"), "\(watcher.logText)")

        kill(watcher.process.processIdentifier, SIGINT)
        watcher.process.waitUntilExit()
        #expect(watcher.process.terminationStatus == 0, "\(watcher.logText)")
    }
}

extension ChildProcess {
    /// Whether the process's output shows `text` within `seconds`.
    func logShows(_ text: String, within seconds: TimeInterval = 30) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if logText.contains(text) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }
}

/// A loopback TCP port held listening by this process, so that nothing else can bind it.
struct HeldPort {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { [descriptor] in
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 1) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        port = UInt16(bigEndian: address.sin_port)
        guard bound else {
            close(descriptor)
            throw RawConnection.Failure(description: "could not hold a port")
        }
    }

    func release() { close(descriptor) }
}
