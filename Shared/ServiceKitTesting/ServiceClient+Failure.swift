import Contracts
import Foundation
import ServiceClient
import Wire

extension ServiceClient {
    /// The error a call gets, or nil when it succeeds.
    public func failure<Request, Response>(_ op: Op<Request, Response>, _ body: Request, token: String? = nil,
                                           attachments: [Data] = [], id: String? = nil, origin: String? = nil) -> ServiceError? {
        do {
            _ = try call(op, body, token: token, origin: origin, attachments: attachments, id: id)
            return nil
        } catch {
            return error as? ServiceError ?? ServiceError(code: .internal, message: "\(error)")
        }
    }
}

extension ServiceError {
    /// `code field`, or the code alone: what a table of bad requests compares.
    public var summary: String { field.map { "\(code.rawValue) \($0)" } ?? code.rawValue }
}
