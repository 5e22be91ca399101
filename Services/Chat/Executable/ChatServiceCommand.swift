import ArgumentParser
import Chat
import Foundation
import Logging
import ServiceKit

@main
struct ChatServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat-service",
        abstract: "Hereabouts chat: conversations of two and their messages, over ZeroMQ.",
        discussion: "Follows auth's change feed; publishes new messages on its PUB socket. Stops cleanly on SIGTERM or SIGINT. Its data is <data dir>/chat.sqlite.")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        let settings = try ServiceSettings(service: "chat", options: options)
        bootstrapLogging(level: settings.logLevel)
        let logger = Logger(label: "hereabouts.chat")
        try await ServiceHost.run([try ChatService(settings: settings, logger: logger)], logger: logger)
    }
}
