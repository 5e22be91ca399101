import Contracts
import Foundation
import ServiceKit

/// Sends fence crossings on geo's PUB socket (`geo.fence/<userId>/`), from the
/// moment the service starts until it stops; none before, none after.
struct FenceEvents: Sendable {
    let channel: EventChannel

    func send(_ type: FenceEvent.Kind, userId: String, postIds: [String], at instant: Date) {
        let topic = GeoAPI.fenceTopic(userId: userId)
        for postId in postIds {
            channel.publish(topic: topic, FenceEvent(type: type, postId: postId, at: instant))
        }
    }
}
