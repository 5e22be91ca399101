import Contracts
import Foundation
import Logging
import ServiceKit
import TestThreads
import Testing

@Suite("Service settings", .ownThread)
struct SettingsTests {
    @Test("defaults: the stack's ports and the per-user data directory")
    func defaults() throws {
        let settings = try ServiceSettings(service: "geo", environment: ["HOME": "/home/ada"])
        #expect(settings.endpoint == "tcp://127.0.0.1:7103")
        #expect(settings.eventsEndpoint == "tcp://127.0.0.1:7203")
        #expect(settings.dataDirectory == "/home/ada/.local/share/hereabouts")
        #expect(settings.databasePath == "/home/ada/.local/share/hereabouts/geo.sqlite")
        #expect(settings.backupDirectory == "/home/ada/.local/share/hereabouts/backups")
        #expect(settings.logLevel == .info)
        #expect(settings.workers >= 4)
        #expect(try ServiceSettings(service: "favourites", environment: [:]).eventsEndpoint == nil)
    }

    @Test("the environment overrides the defaults, and flags override the environment")
    func precedence() throws {
        let environment = [
            "HEREABOUTS_AUTH_ENDPOINT": "tcp://0.0.0.0:9101",
            "HEREABOUTS_AUTH_EVENTS": "tcp://0.0.0.0:9201",
            "HEREABOUTS_DATA_DIR": "/var/lib/hereabouts",
            "HEREABOUTS_BACKUP_DIR": "/backups/.staging",
            "HEREABOUTS_WORKERS": "6",
            "HEREABOUTS_LOG_LEVEL": "debug",
            "HEREABOUTS_CATALOGUE_ENDPOINT": "tcp://catalogue:7102",
        ]
        let fromEnvironment = try ServiceSettings(service: "auth", environment: environment)
        #expect(fromEnvironment.endpoint == "tcp://0.0.0.0:9101")
        #expect(fromEnvironment.eventsEndpoint == "tcp://0.0.0.0:9201")
        #expect(fromEnvironment.dataDirectory == "/var/lib/hereabouts")
        #expect(fromEnvironment.backupDirectory == "/backups/.staging")
        #expect(fromEnvironment.workers == 6)
        #expect(fromEnvironment.logLevel == .debug)
        #expect(fromEnvironment.endpoints(of: "catalogue").requests == "tcp://catalogue:7102")
        #expect(fromEnvironment.endpoints(of: "catalogue").events == "tcp://127.0.0.1:7202")

        let fromFlags = try ServiceSettings(
            service: "auth",
            overrides: .init(endpoint: "ipc:///tmp/a.sock", dataDirectory: "/tmp/data", workers: 3, logLevel: "error"),
            environment: environment)
        #expect(fromFlags.endpoint == "ipc:///tmp/a.sock")
        #expect(fromFlags.eventsEndpoint == "tcp://0.0.0.0:9201")
        #expect(fromFlags.dataDirectory == "/tmp/data")
        #expect(fromFlags.workers == 3)
        #expect(fromFlags.logLevel == .error)
    }

    @Test("flags parse from the command line")
    func flags() throws {
        let options = try ServiceOptions.parse(["--endpoint", "tcp://127.0.0.1:1", "--data-dir", "/d", "--workers", "4", "--log-level", "trace"])
        let settings = try ServiceSettings(service: "chat", options: options, environment: [:])
        #expect(settings.endpoint == "tcp://127.0.0.1:1")
        #expect(settings.eventsEndpoint == "tcp://127.0.0.1:7205")
        #expect(settings.dataDirectory == "/d")
        #expect(settings.workers == 4)
        #expect(settings.logLevel == .trace)
    }

    @Test("nonsense is refused with a message", arguments: [
        ["HEREABOUTS_WORKERS": "many"], ["HEREABOUTS_WORKERS": "0"], ["HEREABOUTS_LOG_LEVEL": "loud"],
    ])
    func nonsense(environment: [String: String]) {
        #expect(throws: (any Error).self) { try ServiceSettings(service: "auth", environment: environment) }
    }
}
