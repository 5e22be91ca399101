import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire
import ZeroMQ

// MARK: Accounts

struct Password: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your password.", subcommands: [PasswordChange.self])
}

struct PasswordChange: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "change", abstract: "Change your password (other sessions end).",
        discussion: "With --password-stdin, the old password is the first line and the new one the second.")
    @OptionGroup var options: CommonOptions
    @Flag(help: "Read both passwords from stdin.") var passwordStdin = false

    func execute(_ gateway: Gateway) throws {
        let old = try readPassword(fromStdin: passwordStdin, prompt: "Current password: ")
        let new = try readPassword(fromStdin: passwordStdin, prompt: "New password: ")
        let reply = try gateway.call(AuthAPI.passwordChange, PasswordChangeRequest(oldPassword: old, newPassword: new), token: .required)
        try gateway.signIn(reply)
        try confirm(options, reply, "Password changed; this session goes on, others have ended")
    }
}

struct Account: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your account.", subcommands: [AccountDelete.self])
}

struct AccountDelete: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete your account: your posts, favourites and trips go; chats stay readable for the others.")
    @OptionGroup var options: CommonOptions
    @Flag(help: "Read the password from stdin.") var passwordStdin = false

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.delete, DeleteRequest(password: try readPassword(fromStdin: passwordStdin)), token: .required)
        gateway.signOut()
        try confirm(options, reply, "Account deleted")
    }
}

// MARK: Posts

struct PostEdit: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "edit", abstract: "Change fields of one of your posts.")
    @OptionGroup var options: CommonOptions
    @Argument var id: String
    @Option var title: String?
    @Option var text: String?
    @Option var category: String?
    @Option(help: "Comma-separated; replaces the tags.") var tags: String?
    @Option(help: "e.g. \"12.50 EUR\".") var price: String?
    @Option(help: "OSM opening_hours.") var hours: String?
    @Option(help: "Metres (10–5,000).") var notifyRadius: Double?
    @Flag(help: "Remove the opening hours.") var clearHours = false
    @Flag(help: "Remove the notify radius (no longer a geofence).") var clearNotifyRadius = false

    func execute(_ gateway: Gateway) throws {
        var request = UpdatePostRequest(id: id)
        if let title { request.title = .set(title) }
        if let text { request.text = .set(text) }
        if let category { request.category = .set(category) }
        if let tags { request.tags = .set(tags.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
        if let price { request.price = .set(try parsePrice(price)) }
        if let hours { request.hours = .set(hours) }
        if clearHours { request.hours = .cleared }
        if let notifyRadius { request.notifyRadius = .set(notifyRadius) }
        if clearNotifyRadius { request.notifyRadius = .cleared }
        let post = try gateway.call(CatalogueAPI.update, request, token: .required).post
        if options.json { return try Output.json(PostReply(post: post)) }
        print("Updated \(post.id) (version \(post.version))")
    }
}

struct PostImageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "image", abstract: "A post's photos (JPEG, PNG or WebP, ≤ 5 MiB, ≤ 10 a post).",
                                                    subcommands: [ImageAdd.self, ImageGet.self, ImageRemove.self])
}

struct ImageAdd: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a photo to one of your posts.")
    @OptionGroup var options: CommonOptions
    @Argument var post: String
    @Argument var file: String

    func execute(_ gateway: Gateway) throws {
        guard let data = FileManager.default.contents(atPath: file) else { throw GatewayError("cannot read \(file)") }
        let image = try gateway.call(CatalogueAPI.addImage, AddImageRequest(postId: post), token: .required, attachments: [data]).image
        if options.json { return try Output.json(ImageReply(image: image)) }
        print("Added \(image.id): \(image.contentType), \(image.width)×\(image.height)")
    }
}

struct ImageGet: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Save a photo to a file.")
    @OptionGroup var options: CommonOptions
    @Argument var image: String
    @Option(name: .shortAndLong, help: "The file (default: the image id with its extension).") var output: String?

    func execute(_ gateway: Gateway) throws {
        let (reply, frames) = try gateway.callWithAttachments(CatalogueAPI.getImage, IDRequest(id: image))
        guard let bytes = frames.first else { throw GatewayError("the reply carried no image", exitCode: 3) }
        let path = output ?? "\(image).\(reply.image.contentType.split(separator: "/").last ?? "bin")"
        try bytes.write(to: URL(fileURLWithPath: path))
        try confirm(options, reply, "Wrote \(path) (\(bytes.count) bytes)")
    }
}

struct ImageRemove: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a photo from your post.")
    @OptionGroup var options: CommonOptions
    @Argument var image: String
    func execute(_ gateway: Gateway) throws {
        try confirm(options, try gateway.call(CatalogueAPI.deleteImage, IDRequest(id: image), token: .required), "Removed \(image)")
    }
}

struct PostImport: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Upsert posts from a JSON feed by their ref (1,000 per call).",
        discussion: "FILE is a JSON array of post bodies (the fields of catalogue.posts.create, each with ref) or an object with such a posts array. With --prune, your posts with a ref that is not in FILE are deleted (posts without a ref are left alone).")
    @OptionGroup var options: CommonOptions
    @Argument var file: String
    @Flag(help: "Delete your posts whose ref is not in FILE.") var prune = false

    struct Summary: Encodable {
        var created = 0, updated = 0, unchanged = 0, deleted = 0
    }

    func execute(_ gateway: Gateway) throws {
        guard let data = FileManager.default.contents(atPath: file) else { throw GatewayError("cannot read \(file)") }
        let drafts: [PostDraft]
        do {
            if let array = try? JSONValueDecoder().decode([PostDraft].self, from: data) {
                drafts = array
            } else {
                drafts = try JSONValueDecoder().decode(ImportPostsRequest.self, from: data).posts
            }
        } catch let error as ServiceError {
            throw GatewayError("\(file): \(error.field.map { "\($0): " } ?? "")\(error.message)")
        }
        var summary = Summary()
        let batches = stride(from: 0, to: drafts.count, by: ImportPostsRequest.maxPosts).map { Array(drafts[$0..<min($0 + ImportPostsRequest.maxPosts, drafts.count)]) }
        for (index, batch) in batches.enumerated() {
            let reply = try gateway.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: batch), token: .required)
            summary.created += reply.created
            summary.updated += reply.updated
            summary.unchanged += reply.unchanged
            progress(done: min((index + 1) * ImportPostsRequest.maxPosts, drafts.count), of: drafts.count)
        }
        if prune {
            let refs = Set(drafts.compactMap(\.ref))
            let me = try gateway.call(AuthAPI.me, Empty(), token: .required).user.id
            var stale: [String] = []
            var cursor: String?
            repeat {
                let page = try gateway.call(CatalogueAPI.list, ListPostsRequest(owner: me, limit: 100, cursor: cursor))
                stale += page.posts.filter { $0.ref.map { !refs.contains($0) } ?? false }.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil
            for id in stale { _ = try gateway.call(CatalogueAPI.delete, IDRequest(id: id), token: .required) }
            summary.deleted = stale.count
        }
        if options.json { return try Output.json(summary) }
        print("\(drafts.count) posts: \(summary.created) created, \(summary.updated) updated, \(summary.unchanged) unchanged"
              + (prune ? ", \(summary.deleted) deleted" : ""))
    }

    /// A bar on stderr, redrawn in place when stderr is a terminal.
    private func progress(done: Int, of total: Int) {
        let width = 30, filled = total == 0 ? width : width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line = "[\(bar)] \(done)/\(total)"
        FileHandle.standardError.write(Data((isatty(2) != 0 ? "\r\(line)" + (done == total ? "\n" : "") : line + "\n").utf8))
    }
}

// MARK: Map box, blocks, fence events

struct Within: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "Posts in a map box MINLAT,MINLON,MAXLAT,MAXLON (MINLON > MAXLON crosses 180°).")
    @OptionGroup var options: CommonOptions
    @Argument var box: String
    @Option var kind: [String] = []
    @Option var limit = 100

    func execute(_ gateway: Gateway) throws {
        let parts = box.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4 else { throw GatewayError("a box is MINLAT,MINLON,MAXLAT,MAXLON, e.g. 52.0,5.0,52.2,5.3") }
        let reply = try gateway.call(GeoAPI.within, WithinRequest(minLat: parts[0], minLon: parts[1], maxLat: parts[2], maxLon: parts[3],
                                                                  kinds: kind.isEmpty ? nil : kind, limit: limit))
        if options.json { return try Output.json(reply) }
        Output.table(["LAT,LON", "TITLE", "KIND", "ID"], reply.hits.map { ["\($0.lat),\($0.lon)", $0.title, $0.kind, $0.id] })
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

struct FenceWatch: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "watch", abstract: "Print your fence crossings as they happen (Ctrl-C stops).")
    @OptionGroup var options: CommonOptions

    func execute(_ gateway: Gateway) throws {
        FileHandle.standardError.write(Data("watching for your fence crossings; Ctrl-C stops\n".utf8))
        try gateway.watchOwnEvents(service: GeoAPI.service, topic: GeoAPI.fenceTopic) { body in
            if options.json {
                FileHandle.standardOutput.write(body + Data("\n".utf8))
            } else if let event = try? JSONValueDecoder().decode(FenceEvent.self, from: body) {
                FileHandle.standardOutput.write(Data("\(Timestamp.format(event.at)) \(event.type.rawValue) \(event.postId)\n".utf8))
            }
            return true
        }
    }
}
