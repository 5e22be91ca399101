@testable import Edge
import Foundation
import Testing

@Suite("The console's files")
struct ConsoleFilesTests {
    @Test("a name resolves inside its directory, to a type the console uses, or not at all")
    func resolving() throws {
        let directory = URL(fileURLWithPath: "/srv/console", isDirectory: true)
        #expect(ConsoleFiles.resolve("console.js", in: directory)?.file.path == "/srv/console/console.js")
        #expect(ConsoleFiles.resolve("images/marker.png", in: directory)?.type == "image/png")
        #expect(ConsoleFiles.resolve("index.html", in: directory)?.type == "text/html; charset=utf-8")
        for name in ["../secret.json", "images/../../secret.json", "..", ".env.json", "images/.hidden.png", "a\\..\\b.js", "",
                     "images//x.png", "/etc/x.json", "notes.txt", "tool.exe", "leaflet.esm.min.js.gz"] {
            #expect(ConsoleFiles.resolve(name, in: directory) == nil, "\(name)")
        }
    }

    @Test("the policy allows the tile server's origin for images and nothing inline")
    func policy() {
        #expect(ConsoleFiles.origin(of: "https://tile.openstreetmap.org/{z}/{x}/{y}.png") == "https://tile.openstreetmap.org")
        #expect(ConsoleFiles.origin(of: "http://127.0.0.1:8081/tiles/{z}/{x}/{y}.png") == "http://127.0.0.1:8081")
        #expect(ConsoleFiles.origin(of: "not a url") == nil)
    }
}
