import Contracts
@testable import Edge
import Testing

/// A route's query parameters come from its op's request type.
@Suite("Query parameters from request types")
struct QueryShapeTests {
    private func shape<Request: Decodable>(_ type: Request.Type) -> [String] {
        QueryShape.parameters(of: type).map { "\($0)" }
    }

    @Test("each field as its type reads: numbers, whole numbers, true or false, lists, text (dates and enums too), in order")
    func fieldsByType() {
        #expect(shape(SearchRequest.self) == [
            #"number("lat")"#, #"number("lon")"#, #"string("place")"#, #"number("radius")"#, #"string("q")"#, #"list("kinds")"#,
            #"list("tags")"#, #"bool("openNow")"#, #"string("at")"#, #"string("sort")"#, #"integer("limit")"#, #"string("cursor")"#,
            #"string("lang")"#, #"bool("highlight")"#,
        ])
        #expect(shape(NearestRequest.self) == [
            #"number("lat")"#, #"number("lon")"#, #"integer("k")"#, #"string("q")"#, #"list("kinds")"#, #"number("maxDistance")"#,
        ])
        #expect(shape(MessagesRequest.self) == [#"string("conversationId")"#, #"integer("before")"#, #"integer("after")"#, #"integer("limit")"#])
        #expect(shape(FavouritesContainsRequest.self) == [#"list("postIds")"#])
        #expect(shape(Empty.self) == [])
    }
}
