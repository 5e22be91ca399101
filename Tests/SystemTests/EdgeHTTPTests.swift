import Contracts
import EdgeFixtures
import Foundation
import Gateway
import ServiceKitTesting
import TestThreads
import Testing
import Wire

/// What HTTP adds to the ops, through the real processes: retries applied once,
/// conditional requests, problems, limits, and a service that stops answering.
@Suite("The edge's HTTP", .serialized, .ownThread)
struct EdgeHTTPTests {
    @Test("a write retried with the same Idempotency-Key is applied once and answered the same; the key with another body is 409")
    func idempotency() throws {
        let stack = try EdgeStack("idem")
        let owner = try stack.register("shop@example.org")
        let shop = stack.client.signed(owner.accessToken)
        let draft: JSONObject = ["kind": "offer", "title": "Lamp", "lat": 52.09, "lon": 5.12]
        let first = try shop.post("/v1/posts", draft, headers: [("Idempotency-Key", "create-lamp-1")])
        let retry = try shop.post("/v1/posts", draft, headers: [("Idempotency-Key", "create-lamp-1")])
        #expect(first.status == 201 && retry.status == 201, "\(first) \(retry)")
        #expect(try first.decode(PostReply.self).post.id == retry.decode(PostReply.self).post.id)
        #expect(first.header("Location") == retry.header("Location"))
        let list = try shop.get("/v1/posts?owner=\(owner.user.id)").decode(PostListReply.self)
        #expect(list.posts.count == 1)
        // Without a key, each POST is its own write.
        _ = try shop.post("/v1/posts", draft)
        #expect(try shop.get("/v1/posts?owner=\(owner.user.id)").decode(PostListReply.self).posts.count == 2)
        // The same key with another body is a client's mistake.
        let reused = try shop.post("/v1/posts", ["kind": "offer", "title": "Chair", "lat": 52.09, "lon": 5.12],
                                   headers: [("Idempotency-Key", "create-lamp-1")])
        #expect(reused.status == 409 && reused.problemCode == "conflict", "\(reused)")
        let malformed = try shop.post("/v1/posts", draft, headers: [("Idempotency-Key", "not a key!")])
        #expect(malformed.status == 400 && malformed.problemCode == "bad_request", "\(malformed)")

        // A chat message retried after a lost response: one message, one event.
        let buddy = try stack.register("buddy@example.org")
        let sends = try (0..<2).map { _ in
            try shop.post("/v1/messages", ["to": .string(buddy.user.id), "text": "Still for sale"], headers: [("Idempotency-Key", "msg-7")])
        }
        #expect(try sends.allSatisfy { $0.status == 201 } && Set(try sends.map { try $0.decode(MessageReply.self).message.id }).count == 1)
        let conversation = try sends[0].decode(MessageReply.self).message.conversationId
        let messages = try stack.client.signed(buddy.accessToken).get("/v1/conversations/\(conversation)/messages")
        #expect(try messages.decode(MessagesReply.self).messages.count == 1)
    }

    @Test("names follow lang, else Accept-Language (Vary says so), on every route and a socket's watches; hits carry highlights")
    func languagesAndHighlights() throws {
        let stack = try EdgeStack("lang")
        func get(_ path: String, _ acceptLanguage: String? = nil) throws -> HTTPReply {
            try stack.client.get(path, headers: acceptLanguage.map { [("Accept-Language", $0)] } ?? [])
        }
        func country(_ path: String, _ acceptLanguage: String? = nil) throws -> Country {
            try get(path, acceptLanguage).decode(CountryReply.self).country
        }
        let german = try get("/v1/countries/nl", "de-AT, en;q=0.5")
        #expect(german.status == 200 && german.header("Vary")?.contains("Accept-Language") == true, "\(german)")
        let nl = try german.decode(CountryReply.self).country
        #expect([nl.name, nl.currencyName, nl.continentName] == ["Niederlande", "Euro", "Europa"])
        #expect(try country("/v1/countries/nl?lang=fr", "de").name == "Pays-Bas")
        #expect(try country("/v1/countries/nl", "xx;q=0, fr-CA;q=0.8, *;q=0.1").name == "Pays-Bas")
        #expect(try country("/v1/countries/nl", "tlh").name == "Netherlands")
        #expect(try country("/v1/countries/nl").name == "Netherlands")
        let place = { (acceptLanguage: String) throws -> Place in
            try get("/v1/places/reverse?lat=50.9333&lon=6.95", acceptLanguage).decode(PlaceReverseReply.self).place
        }
        #expect(try place("de").name == "Köln" && place("en-GB").name == "Cologne" && place("en-GB").nameLang == "en")
        #expect(try get("/v1/places?q=koln", "zh-CN").decode(PlacesReply.self).places.first?.name == "科隆")
        let refused = try get("/v1/countries/nl?lang=not%20a%20tag")
        let field = try refused.object()["field"]?.stringValue
        #expect(refused.status == 422 && refused.problemCode == "invalid_argument" && field == "lang", "\(refused)")

        // A search around a named place names it in the caller's language; its hits mark the words that matched.
        let owner = try stack.register("cafe@example.org")
        let cafe = try stack.client.signed(owner.accessToken)
            .post("/v1/posts", ["kind": "restaurant", "title": "Café Reichard", "lat": 50.9413, "lon": 6.9577]).decode(PostReply.self).post
        var search: SearchReply?
        for _ in 0..<50 where search?.hits.isEmpty ?? true {
            search = try get("/v1/search?place=Cologne&radius=2000&q=cafe", "de").decode(SearchReply.self)
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(search?.center.place?.name == "Köln")
        #expect(search?.hits.map(\.id) == [cafe.id])
        #expect(search?.hits.first?.highlights == Highlights(title: [TextRange(start: 0, length: 4)]))
        let plain = try get("/v1/search?place=Cologne&radius=2000&q=cafe&highlight=false").decode(SearchReply.self)
        #expect(plain.center.place?.name == "Köln" && plain.hits.first?.highlights == nil)

        // A socket's watch names its place in the language the upgrade asked for.
        let socket = try EventSocketClient(port: stack.port, headers: [("Authorization", "Bearer \(owner.accessToken)"),
                                                                       ("Accept-Language", "fr")])
        defer { socket.close() }
        #expect(socket.next(ofType: "ready") != nil)
        _ = socket.send(#"{"type":"watch","id":"map","search":{"place":"Köln","radius":2000,"q":"caf"}}"#)
        let opened = try #require(socket.next(ofType: "watch.opened"))
        #expect(opened["center"]?["place"]?["name"]?.stringValue == "Cologne")
        #expect(opened["hits"]?.arrayValue?.first?["highlights"]?["title"] == .array([.object(["start": 0, "length": 4])]))
    }

    @Test("the console: its page, modules and Leaflet served with their types, cache headers and a CSP naming the tile server; nothing else")
    func consoleFiles() throws {
        let stack = try EdgeStack("console", environment: ["HEREABOUTS_EDGE_TILE_URL": "https://tiles.example.org:8443/{z}/{x}/{y}.png"])
        let page = try stack.client.get("/")
        #expect(page.status == 200 && page.header("Content-Type") == "text/html; charset=utf-8", "\(page)")
        #expect(page.text.contains(#"<script type="module" src="/console/console.js">"#))
        let policy = try #require(page.header("Content-Security-Policy"))
        #expect(policy.contains("script-src 'self'") && policy.contains("img-src 'self' data: blob: https://tiles.example.org:8443;"), "\(policy)")
        #expect(!policy.contains("unsafe-inline") && page.header("Cache-Control") == "no-cache" && page.header("X-Content-Type-Options") == "nosniff")
        let tag = try #require(page.header("ETag"))
        #expect(try stack.client.get("/", headers: [("If-None-Match", tag)]).status == 304)

        let script = try stack.client.get("/console/console.js")
        #expect(script.status == 200 && script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(script.header("Cache-Control") == "public, max-age=3600" && script.header("Content-Security-Policy") == nil)
        #expect(try stack.client.get("/console/console.css").header("Content-Type") == "text/css; charset=utf-8")
        #expect(try stack.client.get("/console/pages/search.js").header("Content-Type") == "text/javascript; charset=utf-8")
        let config = try stack.client.get("/console/config.json").object()
        #expect(config["tileURL"]?.stringValue == "https://tiles.example.org:8443/{z}/{x}/{y}.png")
        #expect(config["mailLinks"] == .bool(false))  // only a demo shows its mail's links
        // Leaflet from Debian's libjs-leaflet (make deps installs it), as an ES module, and its styles.
        let leaflet = try stack.client.get("/vendor/leaflet/leaflet.esm.js")
        #expect(leaflet.status == 200 && leaflet.header("Content-Type") == "text/javascript; charset=utf-8" && leaflet.text.contains("export"))
        #expect(try stack.client.get("/vendor/leaflet/leaflet.css").status == 200)
        // Only the console's own files, of the types it uses.
        for path in ["/console/../../etc/passwd", "/console/..%2F..%2Fetc%2Fpasswd", "/vendor/leaflet/../../../../etc/passwd",
                     "/console/.hidden.js", "/console/missing.js", "/vendor/leaflet/leaflet.esm.min.js.gz", "/console/index.html/x"] {
            let reply = try stack.client.get(path)
            #expect(reply.status == 404, "\(path): \(reply)")
        }
    }

    @Test("the operators' status: 401 unsigned, 403 for an account not named, for an operator each service, geo's index, the edge's rates and its last problems; an operator named by address must have confirmed it, so a deleted operator's address grants nothing until its new owner confirms it")
    func operatorStatus() throws {
        // The demo's operator named by address (here up --demo would name it by id); the demo confirmed it from its mail.
        let stack = try EdgeStack("operator", environment: ["HEREABOUTS_EDGE_OPERATORS": DemoData.operatorEmail.uppercased()],
                                  arguments: ["--demo"])
        let user = stack.client.signed(try stack.register("user@example.org").accessToken)
        let login = try stack.client.post("/v1/auth/login", ["login": .string(DemoData.operatorEmail), "password": .string(DemoData.password)])
        let operatorSession = try login.decode(SessionReply.self)
        let operatorAccount = stack.client.signed(operatorSession.accessToken)
        _ = try user.post("/v1/posts", ["kind": "offer", "title": "Lamp", "lat": 52.09, "lon": 5.12])

        #expect(try stack.client.get("/v1/operator/status").status == 401)
        #expect(try stack.client.get("/v1/operator").status == 401)
        #expect(try user.get("/v1/operator").object()["operator"] == .bool(false))
        let refused = try user.get("/v1/operator/status")
        #expect(try refused.status == 403 && refused.object()["code"]?.stringValue == "permission_denied", "\(refused)")
        #expect(try operatorAccount.get("/v1/operator").object()["operator"] == .bool(true))
        // A demo shows the links of its mail (none leaves): the console offers them in place of a mailbox.
        #expect(try stack.client.get("/console/config.json").object()["mailLinks"] == .bool(true))
        let preview = try stack.client.get("/v1/dev/mail?email=\(DemoData.operatorEmail)")
        #expect(preview.status == 200 && preview.text.contains("/email/verify?token="), "\(preview)")

        // A problem the edge answers is among the last ones, newest first, the path without its query.
        let missing = try stack.client.get("/v1/posts/nothing-here?secret=1")
        #expect(missing.status == 404)
        let reply = try operatorAccount.get("/v1/operator/status")
        #expect(reply.status == 200 && reply.header("Cache-Control") == "no-store", "\(reply)")
        let status = try reply.object()
        let services = status["services"]?.arrayValue ?? []
        #expect(services.compactMap { $0.objectValue?["service"]?.stringValue } == ["auth", "catalogue", "geo", "favourites", "chat"])
        for service in services.compactMap(\.objectValue) {
            #expect(service["answering"] == .bool(true) && service["ready"] == .bool(true) && (service["roundTripMs"]?.doubleValue ?? -1) >= 0,
                    "\(service)")
            #expect((service["memory"]?.objectValue?["residentBytes"]?.doubleValue ?? 0) > 0)
        }
        #expect((status["geo"]?.objectValue?["posts"]?.doubleValue ?? 0) >= 9, "the demo's posts at least")
        let edge = try #require(status["edge"]?.objectValue)
        #expect((edge["requests"]?.doubleValue ?? 0) >= 8 && edge["openSockets"]?.doubleValue == 0, "\(edge)")
        let errors = status["errors"]?.arrayValue?.compactMap(\.objectValue) ?? []
        let newest = try #require(errors.first)
        #expect(newest["path"]?.stringValue == "/v1/posts/nothing-here" && newest["status"]?.doubleValue == 404
                && newest["code"]?.stringValue == "not_found" && newest["requestId"]?.stringValue == missing.header("X-Request-Id"), "\(newest)")
        #expect(errors.dropFirst().first?["status"]?.doubleValue == 403)

        // The operator's account is deleted, and someone registers its address: they are no operator.
        #expect(try operatorAccount.send("DELETE", "/v1/me", json: ["password": .string(DemoData.password)]).status == 204)
        let mail = MailFolder(environment: stack.environment)
        // The deleted operator's own confirmation mail is in the folder too: only a mail written after this counts.
        let before = Set(mail.entries().map(\.file))
        let newcomer = stack.client.signed(try stack.register(DemoData.operatorEmail).accessToken)
        #expect(try newcomer.get("/v1/operator").object()["operator"] == .bool(false))
        #expect(try newcomer.get("/v1/operator/status").status == 403)
        // Whoever confirms the address from its mailbox is the operator the setting names.
        var link: String?
        for _ in 0..<100 where link == nil {
            link = mail.entries().first { $0.to == DemoData.operatorEmail && !before.contains($0.file) }?.links.first
            if link == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        let token = try #require(link.flatMap { URLComponents(string: $0)?.queryItems?.first { $0.name == "token" }?.value })
        #expect(try stack.client.post("/v1/auth/email/verify", ["token": .string(token)]).status == 200)
        #expect(try newcomer.get("/v1/operator").object()["operator"] == .bool(true))
    }

    @Test("posts carry their version as ETag: If-None-Match gives 304, a stale If-Match 412; avatars and images revalidate by ETag; JWKS")
    func conditionalRequests() throws {
        let stack = try EdgeStack("etag")
        let owner = try stack.register("shop@example.org")
        let shop = stack.client.signed(owner.accessToken)
        let post = try shop.post("/v1/posts", ["kind": "offer", "title": "Lamp", "lat": 52.09, "lon": 5.12]).decode(PostReply.self).post
        let read = try stack.client.get("/v1/posts/\(post.id)")
        #expect(read.status == 200 && read.header("ETag") == "\"1\"")
        let unchanged = try stack.client.get("/v1/posts/\(post.id)", headers: [("If-None-Match", "\"1\"")])
        #expect(unchanged.status == 304 && unchanged.body.isEmpty && unchanged.header("ETag") == "\"1\"")

        let edited = try shop.patch("/v1/posts/\(post.id)", ["title": "Desk lamp"], headers: [("If-Match", "\"1\"")])
        #expect(edited.status == 200 && edited.header("ETag") == "\"2\"", "\(edited)")
        let stale = try shop.patch("/v1/posts/\(post.id)", ["title": "Old lamp"], headers: [("If-Match", "\"1\"")])
        #expect(stale.status == 412 && stale.header("Content-Type") == "application/problem+json", "\(stale)")
        #expect(try stack.client.get("/v1/posts/\(post.id)").decode(PostReply.self).post.title == "Desk lamp")
        #expect(try stack.client.get("/v1/posts/\(post.id)", headers: [("If-None-Match", "\"1\"")]).status == 200)
        #expect(try shop.patch("/v1/posts/\(post.id)", ["title": "x"], headers: [("If-Match", "yesterday")]).status == 400)
        // Unconditional (or `*`) changes go through.
        #expect(try shop.patch("/v1/posts/\(post.id)", ["title": "Lamp, any"], headers: [("If-Match", "*")]).header("ETag") == "\"3\"")

        // An avatar: uploaded as bytes with its type; served with an ETag that changes with it.
        let avatar = try shop.send("PUT", "/v1/me/avatar", body: TestImages.png(width: 3, height: 3), contentType: "image/png")
        #expect(try avatar.status == 200 && (try avatar.decode(UserReply.self)).user.hasAvatar == true, "\(avatar)")
        let served = try stack.client.get("/v1/users/\(owner.user.id)/avatar")
        let tag = try #require(served.header("ETag"))
        #expect(served.status == 200 && served.header("Content-Type") == "image/png" && served.header("Cache-Control") == "public, max-age=300")
        #expect(served.header("X-Content-Type-Options") == "nosniff", "\(served)")
        #expect(try stack.client.get("/v1/users/\(owner.user.id)/avatar", headers: [("If-None-Match", tag)]).status == 304)
        _ = try shop.send("PUT", "/v1/me/avatar", body: TestImages.png(width: 5, height: 2), contentType: "image/png")
        let changed = try stack.client.get("/v1/users/\(owner.user.id)/avatar", headers: [("If-None-Match", tag)])
        #expect(changed.status == 200 && changed.header("ETag") != tag)
        let mismatched = try shop.send("PUT", "/v1/me/avatar", body: TestImages.jpeg, contentType: "image/png")
        #expect(mismatched.status == 422 && mismatched.problemCode == "invalid_argument", "\(mismatched)")
        #expect(try shop.delete("/v1/me/avatar").status == 200)
        #expect(try stack.client.get("/v1/users/\(owner.user.id)/avatar").status == 404)

        // Other servers verify Hereabouts tokens with the JWK Set.
        let jwks = try stack.client.get("/.well-known/jwks.json")
        let key = try #require(try jwks.json()["keys"]?.arrayValue?.first)
        #expect(key["kty"] == "OKP" && key["crv"] == "Ed25519" && key["use"] == "sig" && key["alg"] == "EdDSA" && key["kid"] != nil, "\(jwks)")
        #expect(key["x"]?.stringValue?.count == 43)
    }

    @Test("errors are RFC 9457 problems with the protocol's code and the right status; every response carries an X-Request-Id")
    func problems() throws {
        let stack = try EdgeStack("problem")
        let client = stack.client
        func expectProblem(_ reply: HTTPReply, _ status: Int, _ code: String, field: String? = nil,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(reply.status == status, "\(reply)", sourceLocation: sourceLocation)
            #expect(reply.header("Content-Type") == "application/problem+json", "\(reply)", sourceLocation: sourceLocation)
            let problem = try reply.object()
            #expect(problem["code"] == .string(code) && problem["status"] == .number(.integer(Int64(status))), "\(reply)",
                    sourceLocation: sourceLocation)
            #expect(problem["title"]?.stringValue?.isEmpty == false && problem["detail"]?.stringValue?.isEmpty == false,
                    sourceLocation: sourceLocation)
            if let field { #expect(problem["field"] == .string(field), "\(reply)", sourceLocation: sourceLocation) }
        }
        try expectProblem(client.get("/v1/nowhere"), 404, "not_found")
        try expectProblem(client.get("/v1/posts/doesnotexist"), 404, "not_found")
        let wrongMethod = try client.send("PATCH", "/v1/search", json: [:])
        try expectProblem(wrongMethod, 405, "bad_request")
        #expect(wrongMethod.header("Allow") == "GET")
        let me = try client.get("/v1/me")
        try expectProblem(me, 401, "unauthenticated")
        #expect(me.header("WWW-Authenticate") == "Bearer")
        try expectProblem(client.get("/v1/me", headers: [("Authorization", "Basic YTpi")]), 401, "unauthenticated")
        try expectProblem(client.get("/v1/me", headers: [("Authorization", "Bearer not.a.token")]), 401, "unauthenticated")
        try expectProblem(client.get("/v1/search?lat=52&lon=5&radius=0"), 422, "invalid_argument", field: "radius")
        try expectProblem(client.get("/v1/search?lat=north&lon=5&radius=10"), 422, "invalid_argument", field: "lat")
        try expectProblem(client.send("POST", "/v1/auth/login", body: Data("{\"login\":".utf8), contentType: "application/json"),
                          400, "bad_request")
        try expectProblem(client.send("POST", "/v1/auth/login", body: Data("[1,2]".utf8), contentType: "application/json"),
                          400, "bad_request")
        try expectProblem(client.send("POST", "/v1/auth/login", body: Data("login=a".utf8), contentType: "application/x-www-form-urlencoded"),
                          415, "bad_request")
        try expectProblem(client.post("/v1/auth/register", ["email": "not-an-email", "password": "password1"]), 422, "invalid_argument",
                          field: "email")
        let anonymous = stack.client.signed(try stack.anonymous().accessToken)
        try expectProblem(anonymous.post("/v1/trips", ["title": "x", "city": "Köln", "countryCode": "DE"]), 403, "permission_denied")

        // X-Request-Id: echoed when sent (and sane), made otherwise.
        let echoed = try client.get("/health/live", headers: [("X-Request-Id", "trace-42")])
        #expect(echoed.header("X-Request-Id") == "trace-42")
        let made = try client.get("/v1/nowhere")
        #expect(made.header("X-Request-Id")?.count == 36)

        // The edge's own endpoints.
        let ready = try client.get("/health/ready")
        #expect(ready.status == 200 && ready.text.contains("\"ready\""), "\(ready)")
        let document = try client.get("/openapi.yaml")
        #expect(document.status == 200 && document.text.hasPrefix("openapi: 3.1"))
        // Metrics on their own listener (loopback by default), not on the apps' port.
        #expect(try client.get("/metrics").status == 404)
        let metrics = try EdgeClient(port: stack.metricsPort).get("/metrics")
        #expect(metrics.status == 200 && metrics.header("Content-Type")?.hasPrefix("text/plain") == true)
        // Requests by route, method and status, their latencies, the sockets and events.
        #expect(metrics.text.contains(#"hb_requests{http_route="/v1/search",http_request_method="GET",http_response_status_code="422"} 2"#),
                "\(metrics.text)")
        #expect(metrics.text.contains("# TYPE http_server_request_duration histogram"))
        #expect(metrics.text.contains("hereabouts_edge_websockets_open") && metrics.text.contains("hereabouts_edge_events_sent_total"))
        // Auth's mail outbox, asked at the scrape.
        for gauge in ["pending_messages", "oldest_pending_seconds", "failed_last_day_messages", "sent_last_day_messages"] {
            #expect(metrics.text.contains("# TYPE hereabouts_mail_\(gauge) gauge\n")
                    && metrics.text.split(separator: "\n").contains { $0.hasPrefix("hereabouts_mail_\(gauge) ") }, "\(gauge)")
        }
        // Chat's push outbox, likewise.
        for gauge in ["pending_pushes", "oldest_pending_seconds", "sent_pushes", "failed_pushes", "removed_devices"] {
            #expect(metrics.text.contains("# TYPE hereabouts_push_\(gauge) gauge\n")
                    && metrics.text.split(separator: "\n").contains { $0.hasPrefix("hereabouts_push_\(gauge) ") }, "\(gauge)")
        }
        let notSocket = try client.get("/v1/events")
        #expect(notSocket.status == 426, "\(notSocket)")
    }

    @Test("a service that stops answering: calls through the edge get 503 with Retry-After, readiness names it, and all recovers")
    func serviceDown() throws {
        let stack = try EdgeStack("down", environment: ["HEREABOUTS_EDGE_SERVICE_TIMEOUT": "1"])
        let client = stack.client.signed(try stack.anonymous().accessToken)
        #expect(try client.get("/v1/conversations").status == 200)
        let chat = try #require(CrashTests.child(named: "chat-service", of: stack.up.process.processIdentifier))
        #expect(FreezeTests.stop(chat))
        defer { kill(chat, SIGCONT) }
        let down = try client.get("/v1/conversations")
        #expect(down.status == 503 && down.problemCode == "unavailable" && down.header("Retry-After") != nil, "\(down)")
        let ready = try client.get("/health/ready")
        #expect(ready.status == 503 && ready.text.contains("chat") && !ready.text.contains("auth"), "\(ready)")
        // Others are served meanwhile.
        #expect(try client.get("/v1/search?place=Utrecht&radius=1000").status == 200)
        kill(chat, SIGCONT)
        let back = try eventually("chat again") { () -> HTTPReply? in
            let reply = try client.get("/v1/conversations")
            return reply.status == 200 ? reply : nil
        }
        #expect(back.status == 200)
        #expect(try client.get("/health/ready").status == 200)
    }

    @Test("limits: bodies over their size are refused before they are read, the rate limit answers 429, and slow senders are cut off while others are served")
    func limits() throws {
        let stack = try EdgeStack("limits", environment: ["HEREABOUTS_EDGE_RATE_LIMIT": "20/40", "HEREABOUTS_EDGE_HEADER_TIMEOUT": "2",
                                                          "HEREABOUTS_EDGE_BODY_TIMEOUT": "3"])
        let token = try stack.anonymous().accessToken

        // 2 MiB declared: the answer comes with only the head sent, and the connection is closed.
        let declared = try RawConnection(port: stack.port)
        declared.send("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n")
        let refused = try declared.receiveResponse()
        #expect(refused.status == 413 && refused.header("Connection") == "close", "\(refused)")
        #expect(declared.closesWithin(2))
        // Chunked, no length: refused once past 1 MiB, and closed though the client keeps sending.
        let chunked = try RawConnection(port: stack.port)
        chunked.send("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        // (Past the limit it discards at most 8 MiB more, so that a client still sending reads its 413.)
        let chunk = "10000\r\n" + String(repeating: " ", count: 65_536) + "\r\n"
        var sentChunks = 0
        while sentChunks < 1_000, chunked.send(chunk) { sentChunks += 1 }
        #expect(sentChunks < 400, "the edge took \(sentChunks / 16) MiB of a body limited to 1 MiB")
        let chunkedRefused = try chunked.receiveResponse()
        #expect(chunkedRefused.status == 413 && chunkedRefused.problemCode == "too_large", "\(chunkedRefused)")
        // An image over 8 MiB.
        let photo = try stack.client.signed(token).send("PUT", "/v1/me/avatar", body: Data(count: 9 * 1024 * 1024), contentType: "image/png")
        #expect(photo.status == 413 && photo.problemCode == "too_large", "\(photo)")
        // Headers over 16 KiB.
        let huge = try stack.client.get("/health/live", headers: [("X-Padding", String(repeating: "a", count: 20_000))])
        #expect(huge.status == 431, "\(huge)")

        // A slow sender: a byte of headers every half second is cut off at the header deadline (2 s) while others are
        // served; a body that trickles is cut off at the body deadline.
        let slow = try RawConnection(port: stack.port)
        let started = Date()
        Thread.detachNewThread {
            for byte in "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "s", count: 40) {
                guard slow.send(String(byte)) else { return }
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        for _ in 0..<5 { #expect(try stack.client.get("/health/live").status == 200) }
        #expect(slow.closesWithin(6))
        #expect(Date().timeIntervalSince(started) < 5 && Date().timeIntervalSince(started) > 1.5)
        let trickle = try RawConnection(port: stack.port)
        trickle.send("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        let trickleStarted = Date()
        #expect(trickle.closesWithin(8))
        #expect(Date().timeIntervalSince(trickleStarted) > 2.5)

        // The rate limit: a burst of 40, then 20 a second; past it 429 with Retry-After. X-Forwarded-For from an
        // untrusted peer changes nothing.
        var statuses: [Int] = []
        var retryAfter: String?
        for index in 0..<80 {
            let reply = try stack.client.get("/health/live", headers: [("X-Forwarded-For", "203.0.113.\(index)")])
            statuses.append(reply.status)
            if reply.status == 429 { retryAfter = reply.header("Retry-After") }
        }
        #expect(statuses.filter { $0 == 429 }.count > 20 && statuses.prefix(30).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(retryAfter.flatMap(Int.init).map { $0 >= 1 } == true)
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try stack.client.get("/health/live").status == 200)
    }
}
