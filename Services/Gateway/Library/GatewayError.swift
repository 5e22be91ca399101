import StackClient
import Wire

/// What ends a `here` command unsuccessfully, with the exit code scripts rely on:
/// 1 the user's mistake, 2 a service unavailable, 3 anything internal.
public struct GatewayError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var exitCode: Int32

    public init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }

    public var description: String { message }

    /// How a service's error reads and exits.
    public static func from(_ error: ServiceError) -> GatewayError {
        let field = error.field.map { " (\($0))" } ?? ""
        let detail = error.detail.map { " (\($0))" } ?? ""
        return GatewayError("\(error.code.rawValue)\(field): \(error.message)\(detail)", exitCode: error.code.exitCode)
    }

    public static func from(_ error: any Error) -> GatewayError {
        switch error {
        case let error as GatewayError: error
        case let error as ServiceError: from(error)
        default: GatewayError("\(error)", exitCode: 3)
        }
    }
}
