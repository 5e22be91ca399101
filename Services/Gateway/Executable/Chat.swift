import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire

struct Chat: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Conversations of two.",
                                                    subcommands: [ChatSend.self, ChatList.self, ChatShow.self, ChatWatch.self, ChatBlock.self,
                                                                  ChatUnblock.self])
}

struct ChatSend: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "send", abstract: "Send a message to a user (by id).")
    @OptionGroup var options: CommonOptions
    @Argument var user: String
    @Argument var text: [String]

    func execute(_ gateway: Gateway) throws {
        let message = try gateway.call(ChatAPI.send, SendMessageRequest(to: user, text: text.joined(separator: " ")), token: .required)
        if options.json { return try Output.json(message) }
        print("Sent #\(message.message.seq) in \(message.message.conversationId)")
    }
}

struct ChatList: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Your conversations, latest first: peer, last message, unread.")
    @OptionGroup var options: CommonOptions
    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(ChatAPI.conversations, ConversationsRequest(limit: 50), token: .required)
        if options.json { return try Output.json(reply) }
        let peers = Set(reply.conversations.flatMap(\.peerIds))
        let profiles = peers.isEmpty ? [] : try gateway.call(AuthAPI.usersGet, UsersGetRequest(ids: Array(peers))).users
        let names = Dictionary(profiles.map { ($0.id, $0.displayName ?? $0.username ?? $0.id) }) { a, _ in a }
        Output.table(["PEER", "LAST MESSAGE", "UNREAD", "CONVERSATION"], reply.conversations.map { conversation in
            let peer = conversation.peerIds.first ?? "-"
            let name = conversation.deletedPeerIds.contains(peer) ? "(deleted user)" : names[peer] ?? peer
            return [name, String((conversation.lastMessage?.text ?? "").prefix(40)), "\(conversation.unread)", conversation.id]
        })
    }
}

struct ChatShow: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "A conversation's latest messages (and mark them read).")
    @OptionGroup var options: CommonOptions
    @Argument var conversation: String
    @Flag(help: "Every message, not only the latest 50.") var all = false

    func execute(_ gateway: Gateway) throws {
        var messages = try gateway.call(ChatAPI.messages, MessagesRequest(conversationId: conversation, limit: 100), token: .required).messages
        while all, let first = messages.first, first.seq > 1 {
            let older = try gateway.call(ChatAPI.messages, MessagesRequest(conversationId: conversation, before: first.seq, limit: 100),
                                         token: .required).messages
            if older.isEmpty { break }
            messages = older + messages
        }
        if !all { messages = Array(messages.suffix(ChatRules.messagesDefaultLimit)) }
        if let last = messages.last {
            _ = try gateway.call(ChatAPI.read, ReadMarkRequest(conversationId: conversation, seq: last.seq), token: .required)
        }
        if options.json { return try Output.json(MessagesReply(messages: messages)) }
        let me = gateway.session?.userId
        for message in messages {
            print("#\(message.seq) \(Timestamp.format(message.sentAt)) \(message.senderId == me ? "me" : message.senderId): \(message.text)")
        }
    }
}

struct ChatWatch: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "watch", abstract: "Print your messages as they arrive (Ctrl-C stops).")
    @OptionGroup var options: CommonOptions

    func execute(_ gateway: Gateway) throws {
        let me = try gateway.signedInSession().userId
        FileHandle.standardError.write(Data("watching for your messages; Ctrl-C stops\n".utf8))
        try gateway.watchOwnEvents(service: ChatAPI.service, topic: ChatAPI.messageTopic) { body in
            if options.json {
                FileHandle.standardOutput.write(body + Data("\n".utf8))
            } else if let message = try? JSONValueDecoder().decode(ChatMessage.self, from: body) {
                FileHandle.standardOutput.write(Data("\(message.senderId == me ? "me" : message.senderId): \(message.text)\n".utf8))
            }
            return true
        }
    }
}

struct ChatBlock: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "block", abstract: "Take no more messages from a user.")
    @OptionGroup var options: CommonOptions
    @Argument var user: String
    func execute(_ gateway: Gateway) throws {
        try confirm(options, try gateway.call(ChatAPI.block, BlockRequest(userId: user), token: .required), "Blocked \(user)")
    }
}

struct ChatUnblock: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "unblock", abstract: "Take messages from a user again.")
    @OptionGroup var options: CommonOptions
    @Argument var user: String
    func execute(_ gateway: Gateway) throws {
        try confirm(options, try gateway.call(ChatAPI.unblock, BlockRequest(userId: user), token: .required), "Unblocked \(user)")
    }
}
