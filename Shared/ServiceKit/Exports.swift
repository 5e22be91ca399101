// What a serving process needs with no file of its own (tokens, rate limits,
// logging), kept apart so that the edge links no database: part of ServiceKit for
// every service, as Hummingbird re-exports HummingbirdCore.
@_exported import ServiceCore
