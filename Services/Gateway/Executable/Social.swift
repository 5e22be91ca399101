import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire
import ZeroMQ

// MARK: Favourites

struct Fav: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Saved posts.", subcommands: [FavAdd.self, FavRemove.self, FavList.self])
}

struct FavAdd: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Save a post.")
    @OptionGroup var options: CommonOptions
    @Argument var post: String
    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(FavouritesAPI.add, FavouriteRequest(postId: post), token: .required)
        try confirm(options, reply, "Saved (\(reply.count) in your list)")
    }
}

struct FavRemove: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Forget a saved post.")
    @OptionGroup var options: CommonOptions
    @Argument var post: String
    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(FavouritesAPI.remove, FavouriteRequest(postId: post), token: .required)
        try confirm(options, reply, "Removed (\(reply.count) in your list)")
    }
}

struct FavList: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Saved posts, newest first: title, distance from your saved location, and the provider's contact.")
    @OptionGroup var options: CommonOptions
    @Option(help: "How many (1–100).") var limit = 20

    func execute(_ gateway: Gateway) throws {
        let list = try gateway.call(FavouritesAPI.list, FavouritesListRequest(limit: limit), token: .required)
        if options.json { return try Output.json(list) }
        let ids = list.items.map(\.postId)
        let posts = ids.isEmpty ? [] : try gateway.call(CatalogueAPI.getMany, GetPostsRequest(ids: ids)).posts
        let byId = Dictionary(posts.map { ($0.id, $0) }) { first, _ in first }
        let owners = Set(posts.map(\.ownerId))
        let profiles = owners.isEmpty ? [] : try gateway.call(AuthAPI.usersGet, UsersGetRequest(ids: Array(owners))).users
        let contacts = Dictionary(profiles.map { ($0.id, [$0.email, $0.phone].compactMap { $0 }.joined(separator: ", ")) }) { a, _ in a }
        let home = try gateway.call(AuthAPI.me, Empty(), token: .required).user.location
        print("\(list.total) saved")
        Output.table(["TITLE", "DISTANCE", "CONTACT", "ID"], list.items.map { item in
            guard let post = byId[item.postId] else { return ["(gone)", "-", "-", item.postId] }
            let distance = home.map { Output.distance(GeoRules.distance(lat1: $0.lat, lon1: $0.lon, lat2: post.lat, lon2: post.lon)) } ?? "-"
            return [post.title, distance, contacts[post.ownerId].flatMap { $0.isEmpty ? nil : $0 } ?? "-", post.id]
        })
    }
}

// MARK: Location and divers

struct LocationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "location", abstract: "Your saved home location.",
                                                    subcommands: [LocationSet.self])
}

struct LocationSet: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Save your home location (never tracked).")
    @OptionGroup var options: CommonOptions
    @Argument(help: "PLACE or LAT,LON.") var point: String
    @Flag(help: "Let others find you with `here divers near`.") var discoverable = false

    func execute(_ gateway: Gateway) throws {
        let at = try coordinates(of: PointArgument(point), gateway)
        let reply = try gateway.call(AuthAPI.locationSet, LocationSetRequest(lat: at.lat, lon: at.lon, discoverable: discoverable),
                                     token: .required)
        try confirm(options, reply, "Home saved at \(at.place.map(placeLabel) ?? "\(at.lat),\(at.lon)")\(discoverable ? ", discoverable" : "")")
    }
}

struct Divers: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Divers (discoverable users) near a place.", subcommands: [DiversNear.self])
}

struct DiversNear: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "near", abstract: "Users whose home is within a radius, with name and attributes.")
    @OptionGroup var options: CommonOptions
    @Argument(help: "PLACE or LAT,LON.") var point: String
    @Option(help: "5km, 500m or metres.") var radius = "25km"
    @Option(name: .customLong("attr"), help: "KEY=VALUE that must match (repeatable).") var attrs: [String] = []
    @Option var limit = 20

    func execute(_ gateway: Gateway) throws {
        var request = UsersNearRequest(lat: nil, lon: nil, radius: try DistanceArgument.metres(radius), attributes: try attributes(attrs),
                                       limit: limit)
        switch PointArgument(point) {
        case .coordinates(let lat, let lon): (request.lat, request.lon) = (lat, lon)
        case .place(let name): request.place = name
        }
        let reply = try gateway.call(GeoAPI.usersNear, request, token: .required)
        if options.json { return try Output.json(reply) }
        let profiles = reply.users.isEmpty ? [] : try gateway.call(AuthAPI.usersGet, UsersGetRequest(ids: reply.users.map(\.userId))).users
        let byId = Dictionary(profiles.map { ($0.id, $0) }) { a, _ in a }
        print("\(reply.users.count) near \(reply.center.place.map(placeLabel) ?? "\(reply.center.lat),\(reply.center.lon)")")
        Output.table(["DISTANCE", "NAME", "ATTRIBUTES", "ID"], reply.users.map { user in
            let profile = byId[user.userId]
            let attributes = profile?.attributes.values.sorted { $0.key < $1.key }.map { "\($0.key)=\(describe($0.value))" }
                .joined(separator: " ") ?? ""
            return ["≤ " + Output.distance(user.distance), profile?.displayName ?? profile?.username ?? "-", attributes, user.userId]
        })
    }

    private func describe(_ value: AttributeValue) -> String {
        switch value {
        case .string(let text): text
        case .number(let number): number.rounded() == number ? String(Int64(number)) : String(number)
        case .bool(let flag): String(flag)
        }
    }
}

// MARK: Chat

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

// MARK: Fences

struct Fence: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Geofences: sights that notify you nearby.",
                                                    subcommands: [FenceCheck.self, FencePlan.self, FenceWatch.self])
}

struct FenceCheck: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Report where you are: fences entered and left.")
    @OptionGroup var options: CommonOptions
    @Option(help: "PLACE or LAT,LON.") var at: String

    func execute(_ gateway: Gateway) throws {
        let point = try coordinates(of: PointArgument(at), gateway)
        let reply = try gateway.call(GeoAPI.fencesUpdate, FenceUpdateRequest(lat: point.lat, lon: point.lon), token: .required)
        if options.json { return try Output.json(reply) }
        for id in reply.entered { print("entered \(id)") }
        for id in reply.exited { print("left \(id)") }
        print("inside \(reply.inside.count) fence\(reply.inside.count == 1 ? "" : "s")")
    }
}

struct FencePlan: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "plan", abstract: "The nearest fences (≤ 20) for a phone to watch.")
    @OptionGroup var options: CommonOptions
    @Option(help: "PLACE or LAT,LON.") var at: String
    @Option var max = 20

    func execute(_ gateway: Gateway) throws {
        let point = try coordinates(of: PointArgument(at), gateway)
        let reply = try gateway.call(GeoAPI.fencesPlan, FencePlanRequest(lat: point.lat, lon: point.lon, max: max), token: .none)
        if options.json { return try Output.json(reply) }
        Output.table(["POST", "LAT,LON", "RADIUS"], reply.regions.map { [$0.postId, "\($0.lat),\($0.lon)", Output.distance($0.radius)] })
    }
}
