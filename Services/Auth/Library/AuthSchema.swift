import Contracts
import Foundation
import GRDB
import Wire

/// Auth's tables. A shipped migration is never changed; later changes are new ones.
enum AuthSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("auth-1") { db in
            try db.execute(sql: """
                CREATE TABLE user (
                    id TEXT PRIMARY KEY NOT NULL,
                    email TEXT,
                    email_key TEXT UNIQUE,
                    username TEXT UNIQUE,
                    password_hash TEXT,
                    first_name TEXT,
                    last_name TEXT,
                    display_name TEXT,
                    phone TEXT,
                    attributes TEXT NOT NULL DEFAULT '{}',
                    anonymous INTEGER NOT NULL,
                    lat REAL,
                    lon REAL,
                    discoverable INTEGER NOT NULL DEFAULT 0,
                    show_email INTEGER NOT NULL DEFAULT 0,
                    show_phone INTEGER NOT NULL DEFAULT 0,
                    has_avatar INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL
                );
                CREATE TABLE avatar (
                    user_id TEXT PRIMARY KEY NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                    content_type TEXT NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    bytes BLOB NOT NULL
                );
                -- A session is a refresh-token family.
                CREATE TABLE session (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                    created_at REAL NOT NULL,
                    revoked_at REAL,
                    revoked_reason TEXT
                );
                CREATE INDEX session_user ON session(user_id);
                -- Refresh tokens are kept only as SHA-256 hashes.
                CREATE TABLE refresh_token (
                    token_hash BLOB PRIMARY KEY NOT NULL,
                    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
                    issued_at REAL NOT NULL,
                    expires_at REAL NOT NULL,
                    spent_at REAL
                ) WITHOUT ROWID;
                CREATE INDEX refresh_token_session ON refresh_token(session_id);
                -- Failed logins by lower-cased login string, whether or not it names an account.
                CREATE TABLE login_failure (
                    login_key TEXT NOT NULL,
                    at REAL NOT NULL
                );
                CREATE INDEX login_failure_key ON login_failure(login_key, at);
                -- The Ed25519 key that signs access tokens, made on first start.
                CREATE TABLE signing_key (
                    kid TEXT PRIMARY KEY NOT NULL,
                    private_key BLOB NOT NULL,
                    created_at REAL NOT NULL
                );
                """)
        }
        migrator.registerMigration("auth-2") { db in
            try db.execute(sql: """
                -- Wrong passwords, each counted in several budgets (LoginPolicy): the
                -- account from one origin, the account, the origin, and all of them.
                -- login_failure counted by login string alone; its rows age out in
                -- 15 minutes, so they are not carried over.
                DROP TABLE login_failure;
                CREATE TABLE password_failure (
                    budget TEXT NOT NULL,
                    at REAL NOT NULL
                );
                CREATE INDEX password_failure_budget ON password_failure(budget, at);
                """)
        }
        migrator.registerMigration("auth-3") { db in
            // The feed carried discoverable homes to the metre; followers get only the
            // HomeGrid cell now (FeedUser). Entries written before are snapped in place.
            let rows = try Row.fetchAll(db, sql: "SELECT seq, payload FROM change WHERE payload LIKE '%\"discoverable\":true%'")
            for row in rows {
                let payload: String = row["payload"]
                guard case .object(var entry) = try JSONParser.parse(Data(payload.utf8)),
                      case .object(var user)? = entry["user"], case .object(var home)? = user["location"],
                      case .number(let lat)? = home["lat"], case .number(let lon)? = home["lon"] else { continue }
                let cell = HomeGrid.snap(lat: lat.doubleValue, lon: lon.doubleValue)
                home["lat"] = .number(.double(cell.lat))
                home["lon"] = .number(.double(cell.lon))
                user["location"] = .object(home)
                entry["user"] = .object(user)
                try db.execute(sql: "UPDATE change SET payload = ? WHERE seq = ?",
                               arguments: [String(decoding: JSONWriter.data(.object(entry)), as: UTF8.self), row["seq"]])
            }
        }
        migrator.registerMigration("auth-4") { db in
            try db.execute(sql: """
                -- Where each account signed in from (an address, an IPv6 /64, or a key):
                -- wrong passwords sent from there are not charged to the budget that
                -- strangers share (LoginPolicy), so strangers cannot lock the owner out.
                CREATE TABLE known_origin (
                    user_id TEXT NOT NULL,
                    origin TEXT NOT NULL,
                    last_at REAL NOT NULL,
                    PRIMARY KEY (user_id, origin)
                ) WITHOUT ROWID;
                CREATE INDEX known_origin_last_at ON known_origin(last_at);
                """)
        }
        migrator.registerMigration("auth-5") { db in
            try db.execute(sql: """
                -- Account mail (AccountMail): whether the owner confirmed the address, an
                -- address waiting to be confirmed, and the language mail is written in.
                ALTER TABLE user ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE user ADD COLUMN pending_email TEXT;
                ALTER TABLE user ADD COLUMN lang TEXT;
                -- The tokens of mailed links, kept only as SHA-256 hashes; each works once.
                -- purpose: verify (the account's address), change (email = the new
                -- address), reset (a forgotten password).
                CREATE TABLE mail_token (
                    token_hash BLOB PRIMARY KEY NOT NULL,
                    purpose TEXT NOT NULL,
                    user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                    email TEXT NOT NULL,
                    expires_at REAL NOT NULL,
                    used_at REAL
                ) WITHOUT ROWID;
                CREATE INDEX mail_token_user ON mail_token(user_id, purpose);
                -- Mail to send, written in the transaction that makes its token: a crash
                -- never loses one, nor sends one for a change that rolled back. Rows stay
                -- a day after they are sent or given up (the per-address budget counts them).
                CREATE TABLE mail_outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    recipient_key TEXT NOT NULL,
                    message TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at REAL NOT NULL,
                    last_error TEXT,
                    sent_at REAL,
                    failed_at REAL
                );
                CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;
                CREATE INDEX mail_outbox_recipient ON mail_outbox(recipient_key, created_at);
                -- auth.password.forgot writes one of these whether or not an account has the
                -- address, so that it answers in the same time either way; the mail sender
                -- turns each into a token and a mail, or into nothing.
                CREATE TABLE password_reset_request (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    email_key TEXT NOT NULL,
                    at REAL NOT NULL
                );
                """)
        }
    }
}

/// A row of `user`.
struct UserRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    /// The columns in the order `init(row:)` reads them.
    static let selection = """
        id, email, email_key, username, password_hash, first_name, last_name, display_name, phone, attributes,
        anonymous, lat, lon, discoverable, show_email, show_phone, has_avatar, created_at, updated_at,
        email_verified, pending_email, lang
        """

    static let databaseTableName = "user"
    static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    var id: String
    var email: String?
    var emailKey: String?
    var username: String?
    var passwordHash: String?
    var firstName: String?
    var lastName: String?
    var displayName: String?
    var phone: String?
    /// JSON text of the attributes object.
    var attributes: String
    var anonymous: Bool
    var lat: Double?
    var lon: Double?
    var discoverable: Bool
    var showEmail: Bool
    var showPhone: Bool
    var hasAvatar: Bool
    var createdAt: Double
    var updatedAt: Double
    var emailVerified: Bool
    var pendingEmail: String?
    var lang: String?

    /// Reads a row of `selection` by position: hot reads skip Codable's key mapping.
    init(row: Row) {
        id = row[0]; email = row[1]; emailKey = row[2]; username = row[3]; passwordHash = row[4]
        firstName = row[5]; lastName = row[6]; displayName = row[7]; phone = row[8]; attributes = row[9]
        anonymous = row[10]; lat = row[11]; lon = row[12]; discoverable = row[13]; showEmail = row[14]
        showPhone = row[15]; hasAvatar = row[16]; createdAt = row[17]; updatedAt = row[18]
        emailVerified = row[19]; pendingEmail = row[20]; lang = row[21]
    }

    init(id: String, email: String?, emailKey: String?, username: String?, passwordHash: String?,
         firstName: String?, lastName: String?, displayName: String?, phone: String?, attributes: String,
         anonymous: Bool, lat: Double?, lon: Double?, discoverable: Bool, showEmail: Bool, showPhone: Bool,
         hasAvatar: Bool, createdAt: Double, updatedAt: Double, emailVerified: Bool = false, pendingEmail: String? = nil,
         lang: String? = nil) {
        self.id = id; self.email = email; self.emailKey = emailKey; self.username = username
        self.passwordHash = passwordHash; self.firstName = firstName; self.lastName = lastName
        self.displayName = displayName; self.phone = phone; self.attributes = attributes; self.anonymous = anonymous
        self.lat = lat; self.lon = lon; self.discoverable = discoverable; self.showEmail = showEmail
        self.showPhone = showPhone; self.hasAvatar = hasAvatar; self.createdAt = createdAt; self.updatedAt = updatedAt
        self.emailVerified = emailVerified; self.pendingEmail = pendingEmail; self.lang = lang
    }
}
