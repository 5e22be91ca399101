import ArgumentParser
import Contracts
import Foundation
import Gateway
import OpeningHours
import StackClient
import Wire
#if canImport(Glibc)
import Glibc
#endif

struct PostCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post", abstract: "Create, list, show and remove posts.",
        subcommands: [PostCreate.self, PostList.self, PostShow.self, PostEdit.self, PostRemove.self, PostImageCommand.self,
                      PostImport.self])
}

/// "12.5 EUR" or "12.5EUR".
func parsePrice(_ text: String) throws -> Price {
    let letters = text.filter(\.isLetter), digits = text.filter { $0.isNumber || $0 == "." }
    guard let amount = Double(digits), letters.count == 3 else { throw GatewayError("--price takes an amount and a currency, e.g. \"12.50 EUR\"") }
    return Price(amount: amount, currency: letters.uppercased())
}

/// What a post's hours say now, in words: `open now, until Sat 22:00`, with the rule's
/// comment and the hours' standard spelling when it was written otherwise.
func hoursSummary(of post: Post, at instant: Date = Date()) -> String? {
    guard let hours = post.hours, let name = post.timezone, let zone = TimeZoneNames.timeZone(named: name),
          let parsed = try? OpeningHours(parsing: hours) else { return nil }
    // The country from the post's place, for PH and SH; the sun at its point.
    let place = OpeningHoursPlace(latitude: post.lat, longitude: post.lon, country: post.place?.countryCode)
    let state = parsed.state(at: instant, in: zone, place: place)
    var summary = state.status.rawValue.replacingOccurrences(of: "_", with: " ") + " now"
    if let next = state.nextChange {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = next.timeIntervalSince(instant) < 6 * 86_400 ? "EEE HH:mm" : "yyyy-MM-dd HH:mm"
        summary += ", until \(formatter.string(from: next))"
    }
    if let comment = state.comment { summary += " (\"\(comment)\")" }
    if parsed.normalized != hours { summary += "; read as \(parsed.normalized)" }
    return summary
}

struct PostCreate: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Publish a post at a place or point.",
        discussion: "The post's city, country and time zone come from the nearest gazetteer place unless given.")
    @OptionGroup var options: CommonOptions
    @Option(help: "offer, restaurant, sight, tip, event …") var kind: String
    @Option var title: String
    @Option var text = ""
    @Option(help: "PLACE or LAT,LON.") var at: String
    @Option var category: String?
    @Option(help: "Comma-separated.") var tags: String?
    @Option(help: "e.g. \"12.50 EUR\".") var price: String?
    @Option(help: "OSM opening_hours, e.g. \"Mo-Fr 09:00-18:00; Sa 10:00-16:00\".") var hours: String?
    @Option(help: "IANA time zone (default: the place's).") var timezone: String?
    @Option(help: "Metres (10–5,000): notify users who come this close.") var notifyRadius: Double?
    @Option(help: "Your own id for the post.") var ref: String?
    @Option(help: "A photo to add (JPEG, PNG or WebP; repeatable, in order).") var image: [String] = []

    func execute(_ gateway: Gateway) throws {
        let point = try coordinates(of: PointArgument(at), gateway)
        let nearest = try gateway.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: point.lat, lon: point.lon), token: .none)
        let draft = PostPlacement.complete(
            PostDraft(kind: kind, title: title, text: text, lat: point.lat, lon: point.lon, category: category,
                      tags: tags.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? [],
                      price: try price.map(parsePrice), hours: hours, timezone: timezone, notifyRadius: notifyRadius, ref: ref),
            nearest: nearest.place, distance: nearest.distance, placeName: point.place?.name)
        // Photos are read before the post exists, so a missing file leaves nothing half made.
        let photos = try image.map { path -> Data in
            guard let data = FileManager.default.contents(atPath: path) else { throw GatewayError("cannot read \(path)") }
            return data
        }
        var post = try gateway.call(CatalogueAPI.create, CreatePostRequest(draft), token: .required).post
        for photo in photos {
            post.images.append(try gateway.call(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: .required,
                                                attachments: [photo]).image)
        }
        if options.json { return try Output.json(PostReply(post: post)) }
        print("Posted \(post.id): \(post.title) (\(post.kind)) in \(post.place.map { "\($0.city), \($0.countryCode)" } ?? "-")")
    }
}

struct PostList: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Posts, newest first, with the total.")
    @OptionGroup var options: CommonOptions
    @Flag(help: "Only mine.") var mine = false
    @Option(help: "Only this owner's.") var owner: String?
    @Option(help: "Only this kind.") var kind: String?
    @Flag(help: "Newest first (the order catalogue lists in; accepted for clarity).") var newest = false
    @Option(help: "How many (1–100).") var limit = 20

    func execute(_ gateway: Gateway) throws {
        let ownerId = mine ? try gateway.call(AuthAPI.me, Empty(), token: .required).user.id : owner
        let reply = try gateway.call(CatalogueAPI.list, ListPostsRequest(owner: ownerId, kind: kind, limit: limit))
        if options.json { return try Output.json(reply) }
        print("\(reply.total) post\(reply.total == 1 ? "" : "s")\(mine ? " of yours" : "")")
        if !reply.posts.isEmpty {
            Output.table(["CREATED", "KIND", "TITLE", "PLACE", "ID"], reply.posts.map {
                [Timestamp.format($0.createdAt), $0.kind, $0.title, $0.place.map { "\($0.city), \($0.countryCode)" } ?? "-", $0.id]
            })
        }
    }
}

struct PostShow: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "One post, its open status, rating and owner's contact.")
    @OptionGroup var options: CommonOptions
    @Argument var id: String

    func execute(_ gateway: Gateway) throws {
        let post = try gateway.call(CatalogueAPI.get, IDRequest(id: id)).post
        let owner = try gateway.call(AuthAPI.usersGet, UsersGetRequest(ids: [post.ownerId])).users.first
        if options.json { return try Output.json(PostReply(post: post)) }
        print("\(post.title)  (\(post.kind), \(post.id))")
        if !post.text.isEmpty { print(post.text) }
        print("at \(post.lat),\(post.lon)\(post.place.map { " in \($0.city), \($0.countryCode)" } ?? "")")
        if let hours = post.hours { print("hours \(hours) (\(post.timezone ?? "-")): \(hoursSummary(of: post) ?? "unknown now")") }
        if let price = post.price { print("price \(price.amount) \(price.currency)") }
        if !post.tags.isEmpty { print("tags \(post.tags.joined(separator: ", "))") }
        print("rating \(post.rating.average.map { String(format: "%.2f", $0) } ?? "none") (\(post.rating.count))")
        if let owner {
            let contact = [owner.email, owner.phone].compactMap { $0 }.joined(separator: ", ")
            print("by \(owner.displayName ?? owner.username ?? owner.id)\(contact.isEmpty ? "" : ": \(contact)")")
        }
    }
}

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
        if let title { try request.set(.title, to: title) }
        if let text { try request.set(.text, to: text) }
        if let category { try request.set(.category, to: category) }
        if let tags { try request.set(.tags, to: tags.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
        if let price { try request.set(.price, to: try parsePrice(price)) }
        if let hours { try request.set(.hours, to: hours) }
        if clearHours { try request.set(.hours, to: String?.none) }
        if let notifyRadius { try request.set(.notifyRadius, to: notifyRadius) }
        if clearNotifyRadius { try request.set(.notifyRadius, to: Double?.none) }
        let post = try gateway.call(CatalogueAPI.update, request, token: .required).post
        if options.json { return try Output.json(PostReply(post: post)) }
        print("Updated \(post.id) (version \(post.version))")
    }
}

struct PostRemove: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete one of your posts (its images and ratings go with it).")
    @OptionGroup var options: CommonOptions
    @Argument var id: String
    func execute(_ gateway: Gateway) throws {
        try confirm(options, try gateway.call(CatalogueAPI.delete, IDRequest(id: id), token: .required), "Deleted \(id)")
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

struct Rate: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "Rate a post, 1 to 5 stars (again to change it).")
    @OptionGroup var options: CommonOptions
    @Argument var post: String
    @Argument var stars: Int

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(CatalogueAPI.rate, SetRatingRequest(postId: post, stars: stars), token: .required)
        if options.json { return try Output.json(reply) }
        print("Rated \(stars)★")
    }
}
