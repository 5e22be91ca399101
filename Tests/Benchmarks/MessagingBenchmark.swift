import Contracts
import Dispatch
import Foundation
import ServiceClient
import ServiceKit
import Synchronization
import Wire
import ZeroMQ

/// The favourites-and-chat issue's figures: acknowledged chat sends and favourite
/// adds from 4 clients beside a raw echo, and send → SUB delivery at a steady rate.
struct MessagingBenchmark {
    var seconds: Double
    var directory: URL
    var report: BenchmarkReport

    private static let usersPerClient = 10
    private static let posts = 10_000

    func run() throws -> String {
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue", "favourites", "chat"])
        defer { stack.stop() }
        let auth = ServiceClient(service: "auth", endpoint: stack.endpoint("auth"), timeout: 60, tries: 1)
        defer { auth.close() }
        var users: [(token: String, id: String)] = []
        for index in 0..<(4 * Self.usersPerClient + 4) {
            let session = try auth.call(AuthAPI.register, RegisterRequest(email: "bench\(index)@example.org", password: "bench password"))
            users.append((session.accessToken, session.user.id))
        }

        // Posts for favourites to know: 10,000, so each user can fill a list.
        let catalogue = ServiceClient(service: "catalogue", endpoint: stack.endpoint("catalogue"), timeout: 60, tries: 1)
        defer { catalogue.close() }
        var postIds: [String] = []
        for batch in 0..<(Self.posts / 1000) {
            let drafts = (0..<1000).map { PostDraft(kind: "offer", title: "Offer \(batch)-\($0)", lat: 52, lon: 5, ref: "b\(batch)-\($0)") }
            postIds += try catalogue.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: drafts), token: users[0].token).ids
        }
        let favourites = ServiceClient(service: "favourites", endpoint: stack.endpoint("favourites"), timeout: 10, tries: 1)
        defer { favourites.close() }
        try waitUntil("favourites followed catalogue") {
            (try? favourites.call(FavouritesAPI.add, FavouriteRequest(postId: postIds.last!), token: users.last!.token)) != nil
        }
        let chat = ServiceClient(service: "chat", endpoint: stack.endpoint("chat"), timeout: 10, tries: 1)
        defer { chat.close() }
        try waitUntil("chat followed auth") {
            (try? chat.call(ChatAPI.send, SendMessageRequest(to: users[1].id, text: "warm-up"), token: users[0].token)) != nil
        }

        // 1. Throughput beside the echo: chat.send (sender c writes to the last four
        //    users in turn) and favourites.add (client c's users in turn, each post once).
        let tokens = users.map(\.token), ids = users.map(\.id), posts = postIds
        let receivers = Array(ids.suffix(4))
        let send = { @Sendable (client: Int, sequence: Int, round: Int) -> Data in
            let body = JSONObject([("to", .string(receivers[(client + sequence) % 4])), ("text", .string("Dive at \(sequence)? r\(round)"))])
            return RequestEnvelope.encode(id: "s\(round)-\(client)-\(sequence)", op: ChatAPI.send.name, token: tokens[client], body: .object(body))
        }
        let add = { @Sendable (client: Int, sequence: Int, round: Int) -> Data in
            // Round r starts on its own posts, so no add repeats one already saved.
            let step = round * 40_000 + sequence
            let user = client * Self.usersPerClient + (step / Self.posts) % Self.usersPerClient
            let body = JSONObject([("postId", .string(posts[step % Self.posts]))])
            return RequestEnvelope.encode(id: "f\(round)-\(client)-\(sequence)", op: FavouritesAPI.add.name, token: tokens[user],
                                          body: .object(body))
        }
        let sendSample = try chat.exchange([send(0, 0, 9)])?.first ?? Data()
        let echo = try stack.echo(replyBytes: sendSample.count)
        let ok = Data(#""ok":true"#.utf8)
        var rows = ""
        var sends: [Double] = [], adds: [Double] = []
        for round in 0..<2 {
            let echoResult = LoadGenerator.run(endpoint: echo, clients: 4, seconds: seconds,
                                               request: { [send(($0), $1, round)] }, check: { !$0.isEmpty })
            let sendResult = LoadGenerator.run(endpoint: stack.endpoint("chat"), clients: 4, seconds: seconds,
                                               request: { [send($0, $1, round)] }, check: { $0.range(of: ok) != nil })
            let addResult = LoadGenerator.run(endpoint: stack.endpoint("favourites"), clients: 4, seconds: seconds,
                                              request: { [add($0, $1, round)] }, check: { $0.range(of: ok) != nil })
            sends.append(sendResult.rate)
            adds.append(addResult.rate)
            rows += "| \(round + 1) | raw ZeroMQ echo (\(sendSample.count)-byte replies) | \(format(echoResult.rate)) | \(format(echoResult.percentile(0.5), 2)) | \(format(echoResult.percentile(0.99), 2)) | \(echoResult.errors) |\n"
            rows += "| \(round + 1) | chat.send | \(format(sendResult.rate)) | \(format(sendResult.percentile(0.5), 2)) | \(format(sendResult.percentile(0.99), 2)) | \(sendResult.errors) |\n"
            rows += "| \(round + 1) | favourites.add | \(format(addResult.rate)) | \(format(addResult.percentile(0.5), 2)) | \(format(addResult.percentile(0.99), 2)) | \(addResult.errors) |\n"
        }
        let medianSends = Statistics.median(sends), medianAdds = Statistics.median(adds)

        // 2. Delivery: 1,000 messages/s for the measured seconds, each timed from just
        //    before its send to its arrival at a subscriber of the receivers' topics.
        let delivery = try measureDelivery(chat: stack.endpoint("chat"), events: stack.eventsEndpoint("chat"), tokens: Array(tokens.prefix(4)),
                                           receivers: receivers, rate: 1_000)
        let p99 = delivery.percentile(0.99)
        let log = try report.record("messaging", columns: ["chat.send/s", "favourites.add/s", "delivery p99 ms"],
                                    values: [medianSends, medianAdds, p99], digits: 1)

        return """
        ## Favourites and chat: writes and delivery

        \(Machine.measured(with: "`make bench`"))
        `auth-service`, `catalogue-service`, `favourites-service` and `chat-service` run as separate
        processes, write rate limits off (`HEREABOUTS_RATE_LIMIT=0`), SQLite WAL with `synchronous=NORMAL`.

        **Writes.** 4 concurrent clients, closed loop, \(format(seconds)) s per run, each request with its own id
        (each write commits with its kept reply; writes that arrive together share a transaction). `chat.send`: four senders, each writing to four receivers in
        turn (a message, the conversation's seq and activity, then an event per member after the commit).
        `favourites.add`: each client saves posts into the lists of its own \(Self.usersPerClient) users (never one
        already saved). Beside them, a raw ZeroMQ ROUTER echo answering the same chat requests with replies of the
        same size, in the same run.

        | round | what | req/s | p50 ms | p99 ms | errors |
        |---|---|---|---|---|---|
        \(rows)
        This run's medians: `chat.send` \(format(medianSends)) messages/s acknowledged, `favourites.add` \(format(medianAdds))
        adds/s. Over every run of this build in the log at the end of this page: `chat.send`
        \(log.headline(0, unit: " messages/s", digits: 0)) (target ≥ 3,000: \(log.median(0) >= 3000 ? "met" : "not met")).

        **Delivery.** 4 senders paced to 1,000 messages/s in all for \(format(seconds)) s; one SUB socket (plaintext: the
        service role) subscribed to the four receivers' `chat.message/<userId>/` topics, through chat's event thread. Latency from just before the send to the arrival of
        the event, on the same machine's monotonic clock.

        | messages sent | received | p50 ms | p99 ms | max ms |
        |---|---|---|---|---|
        | \(delivery.sent) | \(delivery.latencies.count) | \(format(delivery.percentile(0.5), 2)) | \(format(p99, 2)) | \(format(delivery.latencies.max() ?? .nan, 2)) |

        This run: p99 \(format(p99, 2)) ms; over every run of this build: \(log.headline(2, unit: " ms", digits: 2)) (target
        p99 ≤ 20 ms at 1,000 messages/s, every message received: \(log.median(2) <= 20 && delivery.latencies.count == delivery.sent ? "met" : "not met")).
        """
    }

    struct Delivery {
        var sent: Int
        var latencies: [Double]

        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
    }

    private func measureDelivery(chat: String, events: String, tokens: [String], receivers: [String], rate: Double) throws -> Delivery {
        // Each message's text carries its send time in nanoseconds.
        let received = Mutex<[Double]>([])
        let ready = DispatchSemaphore(value: 0)
        let listener = ServiceThread(name: "bench-sub") {
            guard let subscriber = try? Context.shared.makeSocket(.subscribe) else { ready.signal(); return }
            defer { subscriber.close() }
            for receiver in receivers { try? subscriber.set(.subscribe(Data(ChatAPI.messageTopic(userId: receiver).utf8))) }
            try? subscriber.set(.receiveTimeout(milliseconds: 2000))
            try? subscriber.connect(events)
            ready.signal()
            while let frames = try? subscriber.receiveMessage(), frames.count == 2 {
                let arrived = DispatchTime.now().uptimeNanoseconds
                guard let message = try? JSONValueDecoder().decode(ChatMessage.self, from: frames[1]),
                      let sentAt = UInt64(message.text.dropFirst(2)) else { continue }
                received.withLock { $0.append(Double(arrived - sentAt) / 1_000_000) }
            }
        }
        ready.wait()
        Thread.sleep(forTimeInterval: 0.5)  // the subscription reaches the PUB socket
        let sent = Atomic<Int>(0)
        let perSender = rate / Double(tokens.count)
        let senders = tokens.enumerated().map { index, token in
            ServiceThread(name: "bench-send-\(index)") {
                let client = ServiceClient(service: "chat", endpoint: chat, timeout: 10, tries: 1)
                defer { client.close() }
                let start = DispatchTime.now().uptimeNanoseconds
                let count = Int(perSender * seconds)
                for n in 0..<count {
                    let due = start + UInt64(Double(n) / perSender * 1e9)
                    let now = DispatchTime.now().uptimeNanoseconds
                    if due > now { usleep(UInt32((due - now) / 1000)) }
                    let text = "t=\(DispatchTime.now().uptimeNanoseconds)"
                    if (try? client.call(ChatAPI.send, SendMessageRequest(to: receivers[index], text: text), token: token)) != nil {
                        sent.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        for sender in senders { sender.join() }
        // The listener stops at its receive timeout, once the last events are in.
        listener.join()
        return Delivery(sent: sent.load(ordering: .relaxed), latencies: received.withLock { $0 })
    }

    private func waitUntil(_ what: String, _ condition: () -> Bool) throws {
        for _ in 0..<300 {
            if condition() { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw PeerError("timed out: \(what)")
    }
}
