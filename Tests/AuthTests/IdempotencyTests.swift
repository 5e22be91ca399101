@testable import Auth
import Contracts
import Foundation
import GRDB
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Synchronization
import TestThreads
import Testing
import Wire

@Suite("Retried requests", .ownThread)
struct IdempotencyTests {
    @Test("the same auth.register id twice gives the same user and session, and makes one user")
    func registerTwice() throws {
        let auth = try AuthFixture()
        let body = RegisterRequest(email: "once@example.org", password: "password1")
        let first = try auth.client.call(AuthAPI.register, body, id: "register-once")
        let second = try auth.client.call(AuthAPI.register, body, id: "register-once")
        #expect(second.user == first.user)
        // Tokens are never stored: the retry gets a fresh pair in the same session…
        #expect(second.refreshToken != first.refreshToken)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: second.accessToken).user.id == first.user.id)
        // …and the first refresh token is superseded, not a second session.
        #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: first.refreshToken))?.code == .unauthenticated)
        #expect(try auth.changes().filter { $0.userId == first.user.id }.count == 1)
        #expect(try auth.client.call(AuthAPI.changes, ChangesRequest()).changes.count == 1)
    }

    @Test("a retried register must carry the same password")
    func retryWithOtherPassword() throws {
        let auth = try AuthFixture()
        _ = try auth.client.call(AuthAPI.register, RegisterRequest(email: "pw@example.org", password: "password1"), id: "reg-pw")
        let error = auth.failure(AuthAPI.register, RegisterRequest(email: "pw@example.org", password: "password2"))
        #expect(error?.code == .alreadyExists)
        do {
            _ = try auth.client.call(AuthAPI.register, RegisterRequest(email: "pw@example.org", password: "password2"), id: "reg-pw")
            Issue.record("a retry with another password got a session")
        } catch let error as ServiceError {
            #expect(error.code == .unauthenticated)
        }
    }

    @Test("the same id with a different body is a conflict")
    func conflict() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("One")), token: session.accessToken, id: "upd-1")
        do {
            _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("Two")), token: session.accessToken, id: "upd-1")
            Issue.record("no conflict")
        } catch let error as ServiceError {
            #expect(error.code == .conflict)
        }
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken).user.displayName == "One")
    }

    @Test("a retried write is answered from the log and applied once")
    func writeRetry() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let first = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("Kept")),
                                         token: session.accessToken, id: "kept-1")
        // Someone changes the name in between; the retry must not undo that.
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("Later")), token: session.accessToken)
        let retry = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("Kept")),
                                         token: session.accessToken, id: "kept-1")
        #expect(retry == first)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken).user.displayName == "Later")
    }

    @Test("ids are kept per caller: two users may use the same id")
    func idsPerCaller() throws {
        let auth = try AuthFixture()
        let a = try auth.register()
        let b = try auth.register()
        let one = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("A")), token: a.accessToken, id: "same")
        let two = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("B")), token: b.accessToken, id: "same")
        #expect(one.user.displayName == "A" && two.user.displayName == "B")
    }

    @Test("a failure is kept too: the retry gets the same answer")
    func failureKept() throws {
        let auth = try AuthFixture()
        let taken = try auth.register("taken")
        let body = RegisterRequest(email: "taken@example.org", password: "password1")
        let first = auth.failure(AuthAPI.register, body)
        #expect(first?.code == .alreadyExists)
        _ = try auth.client.call(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: taken.accessToken)
        // With a new id the address is free; with the old one the answer stands.
        do {
            _ = try auth.client.call(AuthAPI.register, body, id: "kept-failure")
        } catch { Issue.record("\(error)") }
        do {
            _ = try auth.client.call(AuthAPI.register, RegisterRequest(email: "again@example.org", password: "password1"), id: "kept-failure")
            Issue.record("the reused id was not a conflict")
        } catch let error as ServiceError {
            #expect(error.code == .conflict)
        }
    }

    @Test("a retry that arrives while the original still hashes waits for it instead of running twice")
    func concurrentRetry() throws {
        let auth = try AuthFixture(standardCost: true)
        let endpoint = auth.stack.endpoint("auth")
        let body = RegisterRequest(email: "racer@example.org", password: "password1")
        let results = ResultsBox<SessionReply>()
        let threads = (0..<3).map { _ in
            ServiceThread(name: "retry") {
                let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 30, tries: 1)
                results.append(Result { try client.call(AuthAPI.register, body, id: "racing-id") })
                client.close()
            }
        }
        threads.forEach { $0.join() }
        let replies = try results.all.map { try $0.get() }
        #expect(replies.count == 3)
        #expect(Set(replies.map(\.user.id)).count == 1)
        #expect(try auth.changes().count == 1)
    }
}

@Suite("The auth runtime", .ownThread)
struct AuthRuntimeTests {
    @Test("health answers while every hashing thread is busy with logins")
    func healthDuringLoginStorm() throws {
        let auth = try AuthFixture(standardCost: true, hashWorkers: 1)
        try auth.register("storm")
        let endpoint = auth.stack.endpoint("auth")
        let loginsDone = ResultsBox<Int>()
        let logins = (0..<4).map { _ in
            ServiceThread(name: "login") {
                let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 60, tries: 1)
                do {
                    _ = try client.call(AuthAPI.login, LoginRequest(login: "storm@example.org", password: "correct horse battery"))
                    loginsDone.append(.success(1))
                } catch {
                    loginsDone.append(.failure(error))
                }
                client.close()
            }
        }
        // The four logins are queued for the one hashing thread (each takes about a
        // second in a debug build) before health is asked: one runs, three wait. Were
        // health queued behind them, its first answer would come only after all four.
        let deadline = Date().addingTimeInterval(30)
        while auth.service.hashingWaiting < 3, loginsDone.all.isEmpty, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(auth.service.hashingWaiting >= 3 && loginsDone.all.isEmpty, "the logins did not queue up")
        for _ in 0..<20 {
            _ = try auth.client.call(AuthAPI.health, Empty())
        }
        let loginsFinishedDuringHealthChecks = loginsDone.all.count
        logins.forEach { $0.join() }
        #expect(loginsFinishedDuringHealthChecks < 4)
        #expect(loginsDone.all.count == 4)
        #expect(loginsDone.all.allSatisfy { (try? $0.get()) == 1 }, "every login of the storm succeeds")
    }

    @Test("password requests over the queue's capacity are refused with rate_limited, not queued without end")
    func hashingQueueBound() throws {
        let auth = try AuthFixture(standardCost: true, hashWorkers: 1, hashQueueCapacity: 1)
        let endpoint = auth.stack.endpoint("auth")
        let codes = ResultsBox<String>()
        let threads = (0..<6).map { index in
            ServiceThread(name: "flood") {
                let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 60, tries: 1)
                do {
                    _ = try client.call(AuthAPI.login, LoginRequest(login: "nobody\(index)", password: "guess"))
                    codes.append(.success("ok"))
                } catch let error as ServiceError {
                    codes.append(.success(error.code.rawValue))
                } catch {
                    codes.append(.success("other"))
                }
                client.close()
            }
        }
        threads.forEach { $0.join() }
        let all = try codes.all.map { try $0.get() }
        #expect(all.contains("rate_limited"))
        #expect(all.allSatisfy { $0 == "rate_limited" || $0 == "unauthenticated" })
    }
}

/// Results gathered from several threads.
final class ResultsBox<Value: Sendable>: Sendable {
    private let results = Mutex<[Result<Value, any Error>]>([])

    func append(_ result: Result<Value, any Error>) {
        results.withLock { $0.append(result) }
    }

    var all: [Result<Value, any Error>] { results.withLock { $0 } }
}
