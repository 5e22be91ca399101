import EdgeFixtures
import Foundation
import HereaboutsKit
import ServiceKitTesting
import TestThreads
import Testing

/// Pushes through HereaboutsKit alone, against `here up`'s processes pushing to a
/// stand-in APNs and Web Push service (HTTP/2 over TLS) that checks each push's
/// tokens and decrypts its payload: what a chat app's `AppDelegate` and a browser do.
@Suite("HereaboutsKit: pushes to closed apps", .ownThread)
struct PushKitTests {
    @Test("a message to a user whose app is closed arrives as a push on their phone and browser, with the sender's name, the text and the unread badge; with the app open, on its socket; signing out stops the phone's")
    func pushes() async throws {
        let service = try PushTestServer(.init(topic: "org.example.divebuddy"))
        let stack = try EdgeStack("kit-push", environment: service.environment)
        defer { stack.stop() }
        let phone = kit(stack.port, languages: ["de-DE"]), browser = kit(stack.port), max = kit(stack.port)
        let lena = try await phone.register(email: "lena@example.org", password: "password1", displayName: "Lena")
        try await browser.login("lena@example.org", password: "password1")
        try await max.register(email: "max@example.org", password: "password1", displayName: "Max")

        // What UIApplication hands the app delegate: 32 bytes.
        let token = Data((0..<32).map { UInt8($0 * 7 % 256) })
        let device = try await phone.registerDevice(apnsToken: token, environment: .sandbox, topic: "org.example.divebuddy")
        #expect(device.token == token.map { String(format: "%02x", $0) }.joined())
        #expect(device.lang == "de-de", "the phone's language, from its Accept-Language")
        let vapid = try await browser.vapidKey()
        try await browser.registerWebPush(endpoint: service.endpoint("lena-firefox"), p256dh: service.p256dh, auth: service.auth)
        #expect(try await browser.devices().count == 2)

        // Closed: the message arrives as pushes.
        let first = try await max.sendMessage("Tauchen am Samstag?", to: lena.id)
        let pushes = try await eventually("both pushes") { service.pushes.count >= 2 ? service.pushes : nil }
        #expect(service.errors.isEmpty, "\(service.errors)")
        for push in pushes {
            #expect(push.title == "Max" && push.body == "Tauchen am Samstag?" && push.badge == 1, "\(push)")
            #expect(push.threadId == first.conversationId && push.data["messageId"] == first.id)
        }
        #expect(Set(pushes.map(\.kind)) == ["apns", "webpush"])
        #expect(pushes.first { $0.kind == "webpush" }?.vapidKey == vapid)

        // Open: the message arrives on the socket.
        var events = phone.events().makeAsyncIterator()
        #expect(try await firstEvent(&events, within: 20, where: \.isConnected) != nil)
        try await max.sendMessage("Um 9 am Hafen", to: lena.id)
        #expect(try await firstEvent(&events, within: 20) { $0.chatText != nil }?.chatText == "Um 9 am Hafen")
        _ = try await eventually("the second message's pushes") { service.pushes.count >= 4 ? true : nil }
        #expect(service.pushes.suffix(2).allSatisfy { $0.badge == 2 })

        // Muted: no pushes, still unread.
        try await phone.setMuted(true, conversation: first.conversationId)
        try await max.sendMessage("(stumm)", to: lena.id)
        try await phone.setMuted(false, conversation: first.conversationId)

        // Signed out on the phone: its device is forgotten, the browser's stays.
        try await phone.logout()
        #expect(try await browser.devices().map(\.platform) == [.webpush])
        try await max.sendMessage("Bis dann", to: lena.id)
        let last = try await eventually("the last push") { service.pushes.count >= 5 ? service.pushes[4] : nil }
        #expect(last.kind == "webpush" && last.body == "Bis dann" && last.badge == 4)
        try await Task.sleep(for: .milliseconds(300))
        #expect(service.pushes.count == 5, "\(service.pushes.map(\.body))")
    }
}
