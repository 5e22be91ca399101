import Foundation
import Wire

extension Post {
    /// Writes the post as its Codable encoding does, field by field: a service
    /// writes every post once per change and serves the bytes, so this path is hot
    /// (an import writes a million of them).
    public func writeJSON(into writer: inout JSONWriter) {
        writer.appendASCII("{\"id\":")
        writer.write(id)
        writer.appendASCII(",\"ownerId\":")
        writer.write(ownerId)
        writer.appendASCII(",")
        draft.writeFields(into: &writer)
        writer.appendASCII(",\"hoursNormalized\":")
        if let hoursNormalized { writer.write(hoursNormalized) } else { writer.appendASCII("null") }
        writer.appendASCII(",\"images\":[")
        for (index, image) in images.enumerated() {
            if index > 0 { writer.appendASCII(",") }
            writer.appendASCII("{\"id\":")
            writer.write(image.id)
            writer.appendASCII(",\"contentType\":")
            writer.write(image.contentType)
            writer.appendASCII(",\"width\":")
            writer.write(Int64(image.width))
            writer.appendASCII(",\"height\":")
            writer.write(Int64(image.height))
            writer.appendASCII(",\"bytes\":")
            writer.write(Int64(image.bytes))
            writer.appendASCII("}")
        }
        writer.appendASCII("],\"rating\":{\"average\":")
        if let average = rating.average { writer.write(average) } else { writer.appendASCII("null") }
        writer.appendASCII(",\"count\":")
        writer.write(Int64(rating.count))
        writer.appendASCII("},\"version\":")
        writer.write(Int64(version))
        writer.appendASCII(",\"createdAt\":")
        writer.write(Timestamp.format(createdAt))
        writer.appendASCII(",\"updatedAt\":")
        writer.write(Timestamp.format(updatedAt))
        writer.appendASCII("}")
    }

    /// The post as one line of JSON.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writeJSON(into: &writer)
        return writer.bytes
    }

}

extension PostDraft {
    /// Writes the draft's members, as its Codable encoding does, without the braces
    /// around them: a post writes them between its own.
    public func writeFields(into writer: inout JSONWriter) {
        writer.appendASCII("\"kind\":")
        writer.write(kind)
        writer.appendASCII(",\"title\":")
        writer.write(title)
        writer.appendASCII(",\"text\":")
        writer.write(text)
        writer.appendASCII(",\"lat\":")
        writer.write(lat)
        writer.appendASCII(",\"lon\":")
        writer.write(lon)
        writer.appendASCII(",\"category\":")
        writeOptional(category, into: &writer)
        writer.appendASCII(",\"tags\":[")
        for (index, tag) in tags.enumerated() {
            if index > 0 { writer.appendASCII(",") }
            writer.write(tag)
        }
        writer.appendASCII("],\"price\":")
        if let price {
            writer.appendASCII("{\"amount\":")
            writer.write(price.amount)
            writer.appendASCII(",\"currency\":")
            writer.write(price.currency)
            writer.appendASCII("}")
        } else {
            writer.appendASCII("null")
        }
        writer.appendASCII(",\"hours\":")
        writeOptional(hours, into: &writer)
        writer.appendASCII(",\"timezone\":")
        writeOptional(timezone, into: &writer)
        writer.appendASCII(",\"place\":")
        if let place {
            writer.appendASCII("{\"city\":")
            writer.write(place.city)
            writer.appendASCII(",\"countryCode\":")
            writer.write(place.countryCode)
            writer.appendASCII("}")
        } else {
            writer.appendASCII("null")
        }
        writer.appendASCII(",\"notifyRadius\":")
        if let notifyRadius { writer.write(notifyRadius) } else { writer.appendASCII("null") }
        writer.appendASCII(",\"ref\":")
        writeOptional(ref, into: &writer)
    }

    private func writeOptional(_ value: String?, into writer: inout JSONWriter) {
        if let value { writer.write(value) } else { writer.appendASCII("null") }
    }
}
