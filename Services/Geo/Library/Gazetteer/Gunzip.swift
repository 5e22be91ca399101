import CZlib
import Foundation

/// Inflates gzip data with zlib: the gazetteer ships gzipped (2.8 MB instead of 6.5).
enum Gunzip {
    static func isGzip(_ data: Data) -> Bool {
        data.count >= 2 && data[data.startIndex] == 0x1F && data[data.startIndex + 1] == 0x8B
    }

    static func inflate(_ data: Data) throws -> Data {
        var stream = z_stream()
        // 16 + MAX_WBITS: a gzip header and trailer around the deflate stream.
        guard inflateInit2_(&stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw GazetteerError.malformed(line: 0, "zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var status = Z_OK
        try data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            while status != Z_STREAM_END {
                status = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    return CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                guard status == Z_OK || status == Z_STREAM_END else {
                    throw GazetteerError.malformed(line: 0, "the gzipped gazetteer is damaged (zlib status \(status))")
                }
                output.append(contentsOf: chunk[0..<(chunk.count - Int(stream.avail_out))])
                if status == Z_OK && stream.avail_in == 0 && stream.avail_out != 0 {
                    throw GazetteerError.malformed(line: 0, "the gzipped gazetteer ends early")
                }
            }
        }
        return output
    }
}
