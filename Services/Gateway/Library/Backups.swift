import Contracts
import Foundation
import ServiceClient
import Wire

/// `here backup DIR` and `here restore DIR`: every service's file copied while the
/// stack serves, described in `DIR/manifest.json`, and put back into a stopped stack.
public enum Backups {
    /// `manifest.json`: what each copy is and how to check it.
    public struct Manifest: Codable, Sendable, Equatable {
        public var format = 1
        /// The backup's name at the services (`<data dir>/backups/<name>/`).
        public var name: String
        public var startedAt: Date
        public var finishedAt: Date
        /// In the order they were taken (`BackupAPI.order`).
        public var services: [BackupReply]
    }

    /// A copy of each service's file in `directory`, each taken by the service itself
    /// (`<service>.backup`) in `BackupAPI.order`, then moved here from the service's
    /// data directory and checked against the SHA-256 the service gave.
    ///
    /// `directory` must be new or empty: a backup is a directory of its own, and
    /// nothing in it is ever replaced. A backup that fails leaves nothing behind: the
    /// copies moved here so far, those still at a service, and the directory when it
    /// was made for this backup are removed. (A service that answers only after `here`
    /// gave up on it still writes its copy; the next backup prunes it an hour later.)
    ///
    /// The services must run on this machine (as under `here up`): their copies are
    /// read from their data directory.
    public static func take(into directory: URL, gateway: Gateway, timeout: TimeInterval = 600,
                            progress: (BackupReply) -> Void = { _ in }) throws -> Manifest {
        let files = FileManager.default
        let made = try prepare(directory)
        let name = "here-" + Self.stamp(Date()) + "-" + Identifier.random(count: 4)
        let started = Date()
        var taken: [BackupReply] = []
        var atService: URL?
        do {
            for service in BackupAPI.order {
                let client = ServiceClient(service: service, endpoint: gateway.endpoint(of: service), timeout: timeout, tries: 1,
                                           curve: try gateway.curve(of: service))
                defer { client.close() }
                var reply = try client.call(BackupAPI.backup(service), BackupRequest(name: name))
                atService = URL(fileURLWithPath: reply.file)
                let copy = directory.appendingPathComponent("\(service).sqlite")
                // Moved, not copied: the service's copy is not needed where it was made.
                do {
                    try files.moveItem(atPath: reply.file, toPath: copy.path)
                } catch {
                    throw GatewayError("could not move \(service)'s copy from \(reply.file) into \(directory.path) (the services must run "
                                       + "on this machine): \(Self.reason(error))")
                }
                try? files.removeItem(at: URL(fileURLWithPath: reply.file).deletingLastPathComponent())
                atService = nil
                reply.file = copy.lastPathComponent
                taken.append(reply)
                try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: copy.path)
                guard try FileDigest.sha256(of: copy).hex == reply.sha256 else {
                    throw GatewayError("the copy of \(service)'s file does not match the SHA-256 it gave")
                }
                progress(reply)
            }
            let manifest = Manifest(name: name, startedAt: started, finishedAt: Date(), services: taken)
            let manifestFile = directory.appendingPathComponent("manifest.json")
            try Self.encoder.encode(manifest).write(to: manifestFile, options: .atomic)
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: manifestFile.path)
            return manifest
        } catch {
            // Undone: what came here, what a service still holds, and a directory made for it.
            for reply in taken { try? files.removeItem(at: directory.appendingPathComponent(reply.file)) }
            try? files.removeItem(at: directory.appendingPathComponent("manifest.json"))
            if let atService { try? files.removeItem(at: atService.deletingLastPathComponent()) }
            if made { try? files.removeItem(at: directory) }
            let failure = GatewayError.from(error)
            throw GatewayError("the backup failed and was undone, nothing of it is left: \(failure.message)", exitCode: failure.exitCode)
        }
    }

    /// Makes `directory`, or checks that it is an empty directory; true when it was made.
    private static func prepare(_ directory: URL) throws -> Bool {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        guard files.fileExists(atPath: directory.path, isDirectory: &isDirectory) else {
            do {
                try files.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw GatewayError("could not make \(directory.path): \(Self.reason(error))")
            }
            return true
        }
        guard isDirectory.boolValue else { throw GatewayError("\(directory.path) is a file; give an empty or new directory") }
        let contents = (try? files.contentsOfDirectory(atPath: directory.path)) ?? []
        guard contents.isEmpty else {
            let shown = contents.sorted().prefix(3).joined(separator: ", ") + (contents.count > 3 ? ", …" : "")
            throw GatewayError("\(directory.path) is not empty (\(shown)); a backup goes into an empty or new directory of its own")
        }
        return false
    }

    /// What a file-system error says, without Foundation's type names.
    private static func reason(_ error: any Error) -> String {
        (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
    }

    /// Puts the copies of `directory` in place of the files in `dataDirectory`, after
    /// checking each against the manifest; the files replaced are moved into
    /// `<data dir>/replaced-<time>/`. The stack must be stopped: a service's file is
    /// never changed under it.
    ///
    /// `only` restores some services' files and leaves the others': their followers
    /// then find a source behind their cursors and replay its feed (`ChangeFollower`).
    /// The manifest returned names what was restored.
    public static func restore(from directory: URL, into dataDirectory: URL, only: Set<String>? = nil,
                               gateway: Gateway) throws -> Manifest {
        let files = FileManager.default
        var manifest = try Self.decoder.decode(Manifest.self, from: Data(contentsOf: directory.appendingPathComponent("manifest.json")))
        guard manifest.format == 1 else {
            throw GatewayError("manifest.json is of format \(manifest.format); this here reads format 1")
        }
        if let only {
            let absent = only.subtracting(manifest.services.map(\.service))
            guard absent.isEmpty else {
                throw GatewayError("the backup has no \(absent.sorted().joined(separator: ", ")); it has \(manifest.services.map(\.service).joined(separator: ", "))")
            }
            manifest.services.removeAll { !only.contains($0.service) }
        }
        for entry in manifest.services {
            let copy = directory.appendingPathComponent(entry.file)
            guard try FileDigest.sha256(of: copy).hex == entry.sha256 else {
                throw GatewayError("\(copy.path) does not match the manifest's SHA-256: not restored")
            }
        }
        // Every process, each replica of a service run as several included.
        let running = ServiceEndpoints.services.flatMap { service in
            ServiceEndpoints.list(gateway.endpoint(of: service)).enumerated().compactMap { replica, endpoint -> String? in
                let client = ServiceClient(service: service, endpoint: endpoint, timeout: 0.5, tries: 1, curve: try? gateway.curve(of: service))
                defer { client.close() }
                guard (try? client.call(HealthAPI.health(service), Empty())) != nil else { return nil }
                return ServiceEndpoints.replicaName(service, replica)
            }
        }
        guard running.isEmpty else {
            throw GatewayError("\(running.joined(separator: ", ")) still running: stop the stack (Ctrl-C on here up) first")
        }
        try files.createDirectory(at: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let aside = dataDirectory.appendingPathComponent("replaced-" + Self.stamp(Date()), isDirectory: true)
        for entry in manifest.services {
            let target = dataDirectory.appendingPathComponent("\(entry.service).sqlite")
            for suffix in ["", "-wal", "-shm"] where files.fileExists(atPath: target.path + suffix) {
                try files.createDirectory(at: aside, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                try files.moveItem(atPath: target.path + suffix, toPath: aside.appendingPathComponent(target.lastPathComponent + suffix).path)
            }
            try files.copyItem(at: directory.appendingPathComponent(entry.file), to: target)
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
        }
        return manifest
    }

    /// `20261125T101500Z`.
    static func stamp(_ date: Date) -> String {
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "UTC")
        format.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return format.string(from: date)
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
