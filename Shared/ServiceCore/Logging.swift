import Logging

/// Sends log lines of `level` and above to standard error. Call once per process.
public func bootstrapLogging(level: Logger.Level) {
    LoggingSystem.bootstrap { label in
        var handler = StandardErrorLogHandler(label: label)
        handler.logLevel = level
        return handler
    }
}

/// swift-log's `StreamLogHandler` on standard error, the same lines, but a logger's
/// own metadata is joined into text only when a line is written. `StreamLogHandler`
/// formats it whenever it is set, and every request sets its id and op on its
/// logger: with lines rare, that was work for nothing on each request.
public struct StandardErrorLogHandler: LogHandler {
    private var lines: StreamLogHandler
    public var metadata: Logger.Metadata = [:]

    public init(label: String) {
        lines = StreamLogHandler.standardError(label: label)
    }

    public var logLevel: Logger.Level {
        get { lines.logLevel }
        set { lines.logLevel = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { lines.metadataProvider }
        set { lines.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        // The logger's metadata under the line's own, as StreamLogHandler merges them.
        if !metadata.isEmpty { event.metadata = metadata.merging(event.metadata ?? [:]) { $1 } }
        lines.log(event: event)
    }
}
