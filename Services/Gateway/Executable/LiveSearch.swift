import Contracts
import Foundation
import Gateway
import Synchronization
import Wire

/// `here search … --watch`, `here within … --watch` and `here divers near … --watch`:
/// the results, then each post or user that enters, changes in or leaves them as it
/// happens, until Ctrl-C (geo's watches).
struct LiveSearch {
    let gateway: Gateway
    let request: WatchOpenRequest
    let json: Bool
    /// Prints the first page (and a fresh one when the watch had to be opened again).
    let printResults: (WatchOpenReply) throws -> Void
    /// An event as a line of text.
    var line: (WatchEvent) throws -> String = Self.hitLine

    /// Renewed this often: well inside the 600 s lease.
    static let renewal: TimeInterval = 240

    func run() throws {
        let ctrlC = Interrupt.trap()
        defer { ctrlC.cancel() }
        var watch: WatchInfo?
        var seq = 0
        var renewed = Date()
        /// Events a renewal said geo had published that had not arrived then.
        var shortfall: (seq: Int, since: Date)?
        func open(again: Bool) throws {
            if let old = watch { _ = try? gateway.call(GeoAPI.watchClose, WatchRequest(id: old.id), token: .required) }
            let reply = try gateway.call(GeoAPI.watchOpen, request, token: .required)
            (watch, seq, renewed, shortfall) = (reply.watch, 0, Date(), nil)
            if again, !json { FileHandle.standardError.write(Data("(the watch was opened again: the list as it is now)\n".utf8)) }
            try printResults(reply)
            // `print` buffers a pipe's output; the events that follow are written at once.
            fflush(nil)
            if !json { FileHandle.standardError.write(Data("watching for changes; Ctrl-C stops\n".utf8)) }
        }
        defer {
            if let watch { _ = try? gateway.call(GeoAPI.watchClose, WatchRequest(id: watch.id), token: .required) }
        }
        try gateway.watchOwnEvents(service: GeoAPI.service, topic: GeoAPI.watchTopic) {
            // A subscription takes a moment to reach geo; a first event lost meanwhile
            // would show as a gap, and the watch would be opened again.
            Thread.sleep(forTimeInterval: 0.3)
            try open(again: false)
        } idle: {
            guard !Interrupt.happened else { return false }
            if let current = watch, Date().timeIntervalSince(renewed) > Self.renewal {
                do {
                    let renewal = try gateway.call(GeoAPI.watchRenew, WatchRequest(id: current.id), token: .required).watch
                    (watch, renewed) = (renewal, Date())
                    if renewal.seq > seq { shortfall = (renewal.seq, Date()) }
                } catch let error as ServiceError where error.code == .notFound {
                    try open(again: true)  // geo restarted and forgot it
                }
            }
            // The last events lost leave no gap behind them; the renewal's count shows them.
            if let short = shortfall, Date().timeIntervalSince(short.since) > 2 {
                shortfall = nil
                if seq < short.seq { try open(again: true) }
            }
            return true
        } handle: { body in
            guard let event = try? JSONValueDecoder().decode(WatchEvent.self, from: body), event.watchId == watch?.id else { return true }
            guard event.seq == seq + 1, event.type != .expired else {
                try open(again: true)
                return true
            }
            seq = event.seq
            if json {
                FileHandle.standardOutput.write(body + Data("\n".utf8))
            } else {
                FileHandle.standardOutput.write(Data((try line(event) + "\n").utf8))
            }
            return true
        }
    }

    /// `+ 230 m  City bike  offer  <id>`, `~ …` for a change, `- <id>` for one that left.
    static func hitLine(_ event: WatchEvent) -> String {
        guard let hit = event.hit else { return "- \(event.postId ?? "?")" }
        let mark = event.type == .entered ? "+" : "~"
        return ([mark] + (hitRows([hit]).first ?? [])).joined(separator: "  ")
    }
}

/// Ctrl-C, caught: it sets a flag instead of ending the process, so that a command
/// that watches notices, closes what it opened and returns.
enum Interrupt {
    private static let requested = Atomic<Bool>(false)

    /// Catches Ctrl-C until the source returned is cancelled. A dispatch source,
    /// not a signal handler: it also sees a SIGINT that arrives blocked (a process
    /// started by one that blocks it inherits the mask), as `here up` does.
    static func trap() -> any DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { requested.store(true, ordering: .relaxed) }
        source.resume()
        return source
    }

    static var happened: Bool { requested.load(ordering: .relaxed) }
}
