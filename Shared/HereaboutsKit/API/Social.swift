import Foundation

/// A favourite: the post's id and when it was saved; with `expandingPosts`, the post
/// and its provider's shown contact too (nil when the post is gone).
public typealias Favourite = Operations.ListFavourites.Output.Ok.Body.JsonPayload.ItemsPayloadPayload

extension Hereabouts {
    // MARK: Favourites

    /// Saves a post as the user's favourite (again: nothing changes); how many the user has.
    @discardableResult
    public func addFavourite(_ postId: String) async throws -> Int {
        try await send { try await $0.addFavourite(path: .init(postId: postId)).ok.body.json.count }
    }

    @discardableResult
    public func removeFavourite(_ postId: String) async throws -> Int {
        try await send { try await $0.removeFavourite(path: .init(postId: postId)).ok.body.json.count }
    }

    /// The user's favourites, newest first.
    public func favourites(expandingPosts: Bool = false, pageSize: Int? = nil) -> Pages<Favourite> {
        Pages { cursor in
            let reply = try await self.send {
                try await $0.listFavourites(query: .init(expand: expandingPosts ? .posts : nil, limit: pageSize, cursor: cursor)).ok.body.json
            }
            return Page(items: reply.items, nextCursor: reply.nextCursor)
        }
    }

    // MARK: Chat

    /// Sends a message to a user (their conversation with the signed-in user is made
    /// on the first one).
    @discardableResult
    public func sendMessage(_ text: String, to userId: String) async throws -> Message {
        try await send { try await $0.sendMessage(body: .json(.init(text: text, to: userId))).created.body.json.message }
    }

    @discardableResult
    public func sendMessage(_ text: String, inConversation conversationId: String) async throws -> Message {
        try await send { try await $0.sendMessage(body: .json(.init(conversationId: conversationId, text: text))).created.body.json.message }
    }

    /// The user's conversations, the most recently active first.
    public func conversations(pageSize: Int? = nil) -> Pages<Conversation> {
        Pages { cursor in
            let reply = try await self.send { try await $0.listConversations(query: .init(limit: pageSize, cursor: cursor)).ok.body.json }
            return Page(items: reply.conversations, nextCursor: reply.nextCursor)
        }
    }

    /// A conversation's messages after `seq` (all of them from 0), oldest first: what
    /// an app fetches on opening a chat, and after its events stream reconnects.
    public func messages(in conversationId: String, after seq: Int = 0, pageSize: Int? = nil) -> Pages<Message> {
        Pages { cursor in
            let after = cursor.flatMap(Int.init) ?? seq
            let messages = try await self.send {
                try await $0.listMessages(path: .init(id: conversationId), query: .init(after: after, limit: pageSize)).ok.body.json.messages
            }
            // The next page starts after the last message; an empty page is the end.
            return Page(items: messages, nextCursor: messages.last.map { String($0.seq) })
        }
    }

    /// Marks a conversation read up to message `seq`.
    public func markRead(_ conversationId: String, upTo seq: Int) async throws {
        _ = try await send { try await $0.markRead(path: .init(id: conversationId), body: .json(.init(seq: seq))).ok }
    }

    // MARK: Trips

    public func createTrip(title: String, city: String, countryCode: String, start: String? = nil, end: String? = nil) async throws -> Trip {
        try await send {
            try await $0.createTrip(body: .json(.init(city: city, countryCode: countryCode, end: end, start: start, title: title)))
                .created.body.json.trip
        }
    }

    /// Adds a user to one of the signed-in user's trips.
    @discardableResult
    public func invite(_ userId: String, toTrip tripId: String) async throws -> Trip {
        try await send { try await $0.inviteToTrip(path: .init(id: tripId), body: .json(.init(userId: userId))).ok.body.json.trip }
    }

    public func trip(_ id: String) async throws -> Trip {
        try await send { try await $0.getTrip(path: .init(id: id)).ok.body.json.trip }
    }

    /// The trip as an iCalendar file (`text/calendar`), for the system calendar.
    public func tripCalendar(_ id: String) async throws -> String {
        try await send { client in
            let body = try await client.tripCalendar(path: .init(id: id)).ok.body.textCalendar
            return try await String(collecting: body, upTo: 1 << 20)
        }
    }
}
