import Contracts
import Foundation
import ServiceKit
import Synchronization
import Wire

/// Sends fence crossings on geo's PUB socket (`geo.fence/<userId>/`), from the
/// moment the service starts until it stops; none before, none after.
final class FenceEvents: Sendable {
    private let publisher = Mutex<EventPublisher?>(nil)

    func open(_ publisher: EventPublisher) {
        self.publisher.withLock { $0 = publisher }
    }

    func close() {
        publisher.withLock { publisher in
            publisher?.close()
            publisher = nil
        }
    }

    func send(_ type: FenceEvent.Kind, userId: String, postIds: [String], at instant: Date) {
        guard !postIds.isEmpty, let publisher = publisher.withLock({ $0 }) else { return }
        let topic = GeoAPI.fenceTopic(userId: userId)
        for postId in postIds {
            guard let body = try? JSONValueEncoder().encodeData(FenceEvent(type: type, postId: postId, at: instant)) else { continue }
            publisher.publish(topic: topic, body: body)
        }
    }
}
