import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire
#if canImport(Glibc)
import Glibc
#endif

/// A password from stdin (`--password-stdin`, one line) or typed at a prompt
/// without echo; never from a flag.
func readPassword(fromStdin: Bool, prompt: String = "Password: ") throws -> String {
    if fromStdin || isatty(0) == 0 {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw GatewayError("no password on stdin") }
        return line
    }
    guard let typed = getpass(prompt) else { throw GatewayError("no password given") }
    return String(cString: typed)
}

/// `KEY=VALUE` attributes: numbers and true/false keep their type.
func attributes(_ pairs: [String]) throws -> Attributes? {
    guard !pairs.isEmpty else { return nil }
    var values: [String: AttributeValue] = [:]
    for pair in pairs {
        guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
            throw GatewayError("--attr takes KEY=VALUE, got \"\(pair)\"")
        }
        let key = String(pair[..<equals]), text = String(pair[pair.index(after: equals)...])
        values[key] = Double(text).map { .number($0) } ?? (text == "true" ? .bool(true) : text == "false" ? .bool(false) : .string(text))
    }
    return Attributes(values)
}

func describe(_ user: User) -> String {
    if user.anonymous { return "anonymous session \(user.id)" }
    let name = user.displayName ?? user.username ?? user.email ?? user.id
    return "\(name) <\(user.email ?? "-")> (\(user.id))"
}

struct Register: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "Create an account and sign in (an anonymous session becomes it).")
    @OptionGroup var options: CommonOptions
    @Option var email: String
    @Flag(help: "Read the password from stdin.") var passwordStdin = false
    @Option var username: String?
    @Option var firstName: String?
    @Option var lastName: String?
    @Option var displayName: String?
    @Option var phone: String?
    @Option(name: .customLong("attr"), help: "A profile attribute, KEY=VALUE (repeatable).") var attrs: [String] = []

    func execute(_ gateway: Gateway) throws {
        let request = RegisterRequest(email: email, password: try readPassword(fromStdin: passwordStdin), username: username,
                                      firstName: firstName, lastName: lastName, displayName: displayName, phone: phone,
                                      attributes: try attributes(attrs))
        // Signed in anonymously: upgrade that account, keeping its favourites.
        let reply = gateway.session?.anonymous == true
            ? try gateway.call(AuthAPI.upgrade, request, token: .required)
            : try gateway.call(AuthAPI.register, request, token: .none)
        try gateway.signIn(reply)
        if options.json { try Output.json(reply) } else { print("Registered and signed in as \(describe(reply.user))") }
    }
}

struct Login: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "Sign in with an email or username.")
    @OptionGroup var options: CommonOptions
    @Argument(help: "Email or username.") var login: String
    @Flag(help: "Read the password from stdin.") var passwordStdin = false

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.login, LoginRequest(login: login, password: try readPassword(fromStdin: passwordStdin)),
                                     token: .none)
        try gateway.signIn(reply)
        if options.json { try Output.json(reply) } else { print("Signed in as \(describe(reply.user))") }
    }
}

struct Logout: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "End the session here and at auth.")
    @OptionGroup var options: CommonOptions
    func execute(_ gateway: Gateway) throws {
        if let session = gateway.session {
            _ = try? gateway.call(AuthAPI.logout, RefreshRequest(refreshToken: session.refreshToken), token: .none)
        }
        gateway.signOut()
        try confirm(options, Empty(), "Signed out")
    }
}

struct Whoami: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "Who the session belongs to.")
    @OptionGroup var options: CommonOptions
    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.me, Empty(), token: .required)
        if options.json { try Output.json(reply) } else { print(describe(reply.user)) }
    }
}

struct Anon: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "Start an anonymous session (browse and save favourites without an account).")
    @OptionGroup var options: CommonOptions
    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.anonymous, Empty(), token: .none)
        try gateway.signIn(reply)
        if options.json { try Output.json(reply) } else { print("Signed in as \(describe(reply.user))") }
    }
}

struct Profile: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your profile: what others see.", subcommands: [ProfileSet.self])
}

struct ProfileSet: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Change your name, phone, avatar, attributes, and which contact details others see.")
    @OptionGroup var options: CommonOptions
    @Option var displayName: String?
    @Option var phone: String?
    @Option(help: "A JPEG, PNG or WebP file (≤ 5 MiB).") var avatar: String?
    @Option(name: .customLong("attr"), help: "KEY=VALUE; the set replaces your attributes (repeatable).") var attrs: [String] = []
    @Flag(help: "Whether your public profile shows your email.") var email: EmailVisibility?
    @Flag(help: "Whether your public profile shows your phone.") var phoneVisibility: PhoneVisibility?

    enum EmailVisibility: String, EnumerableFlag { case showEmail, hideEmail }
    enum PhoneVisibility: String, EnumerableFlag { case showPhone, hidePhone }

    func execute(_ gateway: Gateway) throws {
        var request = ProfileUpdateRequest()
        if let displayName { request.displayName = .set(displayName) }
        if let phone { request.phone = .set(phone) }
        if let attributes = try attributes(attrs) { request.attributes = .set(attributes) }
        if email != nil || phoneVisibility != nil {
            request.contact = ContactUpdate(showEmail: email.map { $0 == .showEmail }, showPhone: phoneVisibility.map { $0 == .showPhone })
        }
        let image = try avatar.map { path -> Data in
            guard let data = FileManager.default.contents(atPath: path) else { throw GatewayError("cannot read \(path)") }
            return data
        }
        let reply = try gateway.call(AuthAPI.profileUpdate, request, token: .required, attachments: image.map { [$0] } ?? [])
        if options.json { return try Output.json(reply) }
        print("Profile saved: \(describe(reply.user))")
    }
}

struct Password: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your password.",
                                                    subcommands: [PasswordChange.self, PasswordForgot.self, PasswordReset.self])
}

struct PasswordForgot: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "forgot", abstract: "Mail a reset link to an address, if an account has it (valid for an hour, once).")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The account's email address.") var email: String

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.passwordForgot, PasswordForgotRequest(email: email), token: .none)
        try confirm(options, reply, "If an account has \(email), a reset link is on its way (here mail lists mail the stack kept)")
    }
}

struct PasswordReset: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset", abstract: "Set a new password with a reset link's token, and sign in (every other session ends).")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The token of the link (its token=… part), or the whole link.") var token: String
    @Flag(help: "Read the new password from stdin.") var passwordStdin = false

    func execute(_ gateway: Gateway) throws {
        let password = try readPassword(fromStdin: passwordStdin, prompt: "New password: ")
        let reply = try gateway.call(AuthAPI.passwordReset, PasswordResetRequest(token: linkToken(token), newPassword: password), token: .none)
        try gateway.signIn(reply)
        try confirm(options, reply, "Password set; signed in as \(reply.user.email ?? reply.user.id), every other session has ended")
    }
}

/// The token of a mailed link, given as the token or as the whole link.
func linkToken(_ text: String) -> String {
    URLComponents(string: text)?.queryItems?.first { $0.name == "token" }?.value ?? text
}

struct PasswordChange: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "change", abstract: "Change your password (other sessions end).",
        discussion: "With --password-stdin, the old password is the first line and the new one the second.")
    @OptionGroup var options: CommonOptions
    @Flag(help: "Read both passwords from stdin.") var passwordStdin = false

    func execute(_ gateway: Gateway) throws {
        let old = try readPassword(fromStdin: passwordStdin, prompt: "Current password: ")
        let new = try readPassword(fromStdin: passwordStdin, prompt: "New password: ")
        let reply = try gateway.call(AuthAPI.passwordChange, PasswordChangeRequest(oldPassword: old, newPassword: new), token: .required)
        try gateway.signIn(reply)
        try confirm(options, reply, "Password changed; this session goes on, others have ended")
    }
}

struct Account: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your account.",
                                                    subcommands: [AccountVerify.self, AccountResend.self, AccountEmail.self, AccountConfirm.self, AccountDelete.self])
}

struct AccountVerify: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Confirm an address with a mailed link's token (a new account's, or a new address's).")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The token of the link (its token=… part), or the whole link.") var token: String

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.emailVerify, EmailTokenRequest(token: linkToken(token)), token: .none)
        try confirm(options, reply, "\(reply.email) confirmed")
    }
}

struct AccountConfirm: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "confirm", abstract: "Mark an account's address confirmed without its link (the operator's here only: support, a demo).")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The account's email address.") var email: String

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.emailConfirm, EmailRequest(email: email), token: .none)
        try confirm(options, reply, "\(reply.email) confirmed")
    }
}

struct AccountResend: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "resend", abstract: "Mail your address a new confirmation link (earlier links stop working).")
    @OptionGroup var options: CommonOptions

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.emailVerifyResend, Empty(), token: .required)
        try confirm(options, reply, "A confirmation link went to \(reply.sentTo)")
    }
}

struct AccountEmail: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "email", abstract: "Move your account to a new address: it changes once the link mailed to it is opened.")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The new address.") var email: String
    @Flag(help: "Read the password from stdin.") var passwordStdin = false

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.emailChange, EmailChangeRequest(email: email, password: try readPassword(fromStdin: passwordStdin)),
                                     token: .required)
        try confirm(options, reply, "A confirmation link went to \(reply.sentTo); your address changes when it is opened (here account verify TOKEN)")
    }
}

struct AccountDelete: GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete your account: your posts, favourites and trips go; chats stay readable for the others.")
    @OptionGroup var options: CommonOptions
    @Flag(help: "Read the password from stdin.") var passwordStdin = false

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(AuthAPI.delete, DeleteRequest(password: try readPassword(fromStdin: passwordStdin)), token: .required)
        gateway.signOut()
        try confirm(options, reply, "Account deleted")
    }
}

struct LocationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "location", abstract: "Your saved home location.",
                                                    subcommands: [LocationSet.self])
}

struct LocationSet: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Save your home location (never tracked).")
    @OptionGroup var options: CommonOptions
    @Argument(help: "PLACE or LAT,LON.") var point: String
    @Flag(help: "Let others find you with `here divers near`.") var discoverable = false

    func execute(_ gateway: Gateway) throws {
        let at = try coordinates(of: PointArgument(point), gateway)
        let reply = try gateway.call(AuthAPI.locationSet, LocationSetRequest(lat: at.lat, lon: at.lon, discoverable: discoverable),
                                     token: .required)
        try confirm(options, reply, "Home saved at \(at.place.map(placeLabel) ?? "\(at.lat),\(at.lon)")\(discoverable ? ", discoverable" : "")")
    }
}
