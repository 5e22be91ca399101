import Contracts
import Foundation
import Wire

extension UserIndex {
    /// The events an applied batch of homes makes for the `usersNear` watches it
    /// touches (those whose area holds a changed home's old or new place, found
    /// through the grid): each such watch asks again as `geo.users.near` would now
    /// and reports the difference from what its owner holds — `left` first, then
    /// `changed` (a home moved to another distance band), then `entered`, nearest
    /// first. So the owner's list stays what a fresh `geo.users.near` gives, `limit`
    /// included.
    ///
    /// Runs on the thread that applies changes, right after it published the batch.
    func watchEvents(touching points: [(lat: Double, lon: Double)], watches state: inout WatchRegistry.State)
        -> [(owner: String, json: [UInt8])] {
        var touched = Set<String>()
        for point in points { state.userGrid.candidates(lat: point.lat, lon: point.lon, into: &touched) }
        var events: [(owner: String, json: [UInt8])] = []
        // By id, so that events come in one order however the set is laid out.
        for id in touched.sorted() {
            guard var watch = state.watches[id], case .users(var users) = watch.subject else { continue }
            let now = members(of: users, owner: watch.owner)
            let held = Dictionary(users.members.map { ($0.userId, $0.distance) }) { first, _ in first }
            let kept = Set(now.map(\.userId))
            var changes: [(WatchEvent.Kind, NearUser)] = users.members.filter { !kept.contains($0.userId) }.map { (.left, $0) }
            changes += now.compactMap { user in
                guard let distance = held[user.userId] else { return nil }
                return distance == user.distance ? nil : (.changed, user)
            }
            changes += now.filter { held[$0.userId] == nil }.map { (.entered, $0) }
            guard !changes.isEmpty else { continue }
            for (type, user) in changes {
                watch.seq += 1
                var writer = JSONWriter(capacity: 160)
                WatchEventWriter.begin(type, watchId: id, seq: watch.seq, into: &writer)
                if type == .left {
                    writer.appendASCII(",\"userId\":")
                    writer.write(user.userId)
                } else {
                    writer.appendASCII(",\"user\":{\"userId\":")
                    writer.write(user.userId)
                    writer.appendASCII(",\"distance\":")
                    writer.write(user.distance)
                    writer.appendASCII("}")
                }
                writer.appendASCII("}")
                events.append((watch.owner, writer.bytes))
            }
            users.members = now
            watch.subject = .users(users)
            state.watches[id] = watch
        }
        return events
    }

    /// A `usersNear` watch's list as `geo.users.near` gives it now.
    func members(of watch: UserWatch, owner: String) -> [NearUser] {
        near(lat: watch.center.lat, lon: watch.center.lon, radius: watch.reach, attributes: watch.attributes, excluding: owner,
             limit: watch.limit)
    }
}
