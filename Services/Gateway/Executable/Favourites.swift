import ArgumentParser
import Contracts
import Foundation
import Gateway
import StackClient
import Wire

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
        let ids = FavouritesJoin.postIds(of: list)
        let posts = ids.isEmpty ? [] : try gateway.call(CatalogueAPI.getMany, GetPostsRequest(ids: ids)).posts
        let owners = FavouritesJoin.ownerIds(of: posts)
        let providers = owners.isEmpty ? [] : try gateway.call(AuthAPI.usersGet, UsersGetRequest(ids: owners)).users
        let page = FavouritesJoin.join(list, posts: posts, providers: providers)
        // The same rows as the table, as the edge's `GET /v1/favourites?expand=posts` gives them.
        if options.json { return try Output.json(page) }
        let home = try gateway.call(AuthAPI.me, Empty(), token: .required).user.location
        print("\(page.total) saved")
        Output.table(["TITLE", "DISTANCE", "CONTACT", "ID"], page.items.map { entry in
            guard let post = entry.post else { return ["(gone)", "-", "-", entry.postId] }
            let distance = home.map { Output.distance(GeoRules.distance(lat1: $0.lat, lon1: $0.lon, lat2: post.lat, lon2: post.lon)) } ?? "-"
            let contact = [entry.provider?.email, entry.provider?.phone].compactMap { $0 }.joined(separator: ", ")
            return [post.title, distance, contact.isEmpty ? "-" : contact, post.id]
        })
    }
}
