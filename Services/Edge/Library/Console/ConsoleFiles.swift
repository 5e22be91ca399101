import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Wire

/// The console's plain files: its page at `/`, its modules (pages under
/// `/console/pages/`) and styles under `/console/`, and Leaflet under `/vendor/leaflet/` from where Debian's
/// `libjs-leaflet` installs it. No build step: what is in the edge's resources is
/// what the browser gets.
///
/// Not API routes: they are left out of the route table that `Docs/openapi.yaml` is
/// compared with.
struct ConsoleFiles: Sendable {
    /// The console's own files (`Resources/Console`).
    let console: URL?
    /// Leaflet's installed directory (`leaflet.esm.js`, `leaflet.css`, `images/`).
    let leaflet: URL
    /// The map's tiles, `{z}/{x}/{y}` in it; its origin is the only one outside the
    /// edge's own that the page may load from.
    let tileURL: String
    let tileAttribution: String
    let showsMailLinks: Bool

    static let defaultTileURL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
    static let defaultTileAttribution = "© <a href=\"https://www.openstreetmap.org/copyright\">OpenStreetMap</a> contributors"

    init(settings: EdgeSettings) {
        console = Bundle.module.url(forResource: "Console", withExtension: nil)
        leaflet = URL(fileURLWithPath: settings.leafletDirectory, isDirectory: true)
        tileURL = settings.tileURL
        tileAttribution = settings.tileAttribution
        showsMailLinks = settings.showsMailLinks
    }

    func register(into router: Router<EdgeContext>) {
        router.get("/") { request, _ in try serve(name: "index.html", in: console, for: request) }
        // The pages account mail links to (HEREABOUTS_PUBLIC_URL, by default the edge): the
        // console, which reads the token from the query.
        for path in ["/email/verify", "/password/reset"] {
            router.get(RouterPath(path)) { request, _ in try serve(name: "index.html", in: console, for: request) }
        }
        router.get("/console/config.json") { _, _ in config() }
        router.get("/console/**") { request, context in
            try serve(name: context.parameters.getCatchAll().joined(separator: "/"), in: console, for: request)
        }
        router.get("/vendor/leaflet/**") { request, context in
            try serve(name: context.parameters.getCatchAll().joined(separator: "/"), in: leaflet, for: request)
        }
    }

    /// What the page needs to know of the edge's settings.
    private func config() -> Response {
        let body = JSONWriter.data(.object(["tileURL": .string(tileURL), "tileAttribution": .string(tileAttribution),
                                            "mailLinks": .bool(showsMailLinks)]))
        return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-cache"],
                        body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A file of `directory` by its relative `name`: only names of plain segments
    /// (no `..`, no hidden files) and only types the console uses; else 404.
    private func serve(name: String, in directory: URL?, for request: Request) throws -> Response {
        guard let directory, let (file, type) = Self.resolve(name, in: directory),
              let data = FileManager.default.contents(atPath: file.path) else {
            throw Problem.notFound("no such file")
        }
        var headers: HTTPFields = [.contentType: type, .xContentTypeOptions: "nosniff"]
        // The page is checked again each time (it names the modules); what it loads is
        // kept an hour: a new edge serves new files, and ETag revalidates them.
        headers[.cacheControl] = type.hasPrefix("text/html") ? "no-cache" : "public, max-age=3600"
        let tag = "\"\(Self.digest(data))\""
        headers[.eTag] = tag
        if request.headers[.ifNoneMatch]?.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == tag }) == true {
            return Response(status: .notModified, headers: headers)
        }
        if type.hasPrefix("text/html") {
            headers[.contentSecurityPolicy] = contentSecurityPolicy
            headers[.xFrameOptions] = "DENY"
            headers[.referrerPolicy] = "same-origin"
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The file `name` stands for in `directory`, and its type: nil unless every
    /// segment is a plain name (no `..`, no hidden file, no backslash) and the type is
    /// one the console uses.
    static func resolve(_ name: String, in directory: URL) -> (file: URL, type: String)? {
        let segments = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.isEmpty, segments.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") && !$0.contains("\\") }),
              let type = types[(name as NSString).pathExtension.lowercased()] else { return nil }
        return (directory.appendingPathComponent(name), type)
    }

    /// Scripts, styles and data from the edge itself; images (tiles) also from the
    /// tile server's origin; nothing inline, no frames, no plugins.
    var contentSecurityPolicy: String {
        let tiles = Self.origin(of: tileURL).map { " \($0)" } ?? ""
        return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:\(tiles); "
            + "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    }

    /// `https://tile.example.org` of `https://tile.example.org/{z}/{x}/{y}.png`.
    static func origin(of template: String) -> String? {
        guard let url = URL(string: template.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")),
              let scheme = url.scheme, let host = url.host else { return nil }
        return "\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")"
    }

    static let types: [String: String] = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8",
        "css": "text/css; charset=utf-8", "json": "application/json", "svg": "image/svg+xml", "png": "image/png",
        "ico": "image/x-icon", "webp": "image/webp",
    ]

    /// FNV-1a of the bytes: an ETag, not a check against tampering.
    private static func digest(_ data: Data) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return String(hash, radix: 16)
    }
}

extension HTTPField.Name {
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
