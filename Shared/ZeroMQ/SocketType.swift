import CZeroMQ

/// The socket patterns Hereabouts uses.
public enum SocketType: Sendable, CustomStringConvertible {
    case request, reply, dealer, router, publish, subscribe, pair, push, pull
    /// A PUB that hands its subscribers' subscription messages to the application.
    case extendedPublish
    /// A SUB that sends subscription messages as frames and filters nothing itself.
    case extendedSubscribe

    var rawValue: Int32 {
        switch self {
        case .request: ZMQ_REQ
        case .reply: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .publish: ZMQ_PUB
        case .subscribe: ZMQ_SUB
        case .pair: ZMQ_PAIR
        case .push: ZMQ_PUSH
        case .pull: ZMQ_PULL
        case .extendedPublish: ZMQ_XPUB
        case .extendedSubscribe: ZMQ_XSUB
        }
    }

    public var description: String {
        switch self {
        case .request: "REQ"
        case .reply: "REP"
        case .dealer: "DEALER"
        case .router: "ROUTER"
        case .publish: "PUB"
        case .subscribe: "SUB"
        case .pair: "PAIR"
        case .push: "PUSH"
        case .pull: "PULL"
        case .extendedPublish: "XPUB"
        case .extendedSubscribe: "XSUB"
        }
    }
}
