import GRDB

/// Chat's tables. A shipped migration is never changed; later changes are new ones.
enum ChatSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("chat-1") { db in
            try db.execute(sql: """
                -- The users auth has, from auth.changes: messages go only to them, and
                -- never to one deleted (whose tokens are refused too).
                CREATE TABLE chat_user (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0
                ) WITHOUT ROWID;
                -- One conversation per pair (user_a < user_b). activity grows with every
                -- message across all conversations: lists order by it, cursors name it.
                CREATE TABLE conversation (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_a TEXT NOT NULL,
                    user_b TEXT NOT NULL,
                    last_seq INTEGER NOT NULL DEFAULT 0,
                    activity INTEGER NOT NULL,
                    UNIQUE (user_a, user_b)
                ) WITHOUT ROWID;
                CREATE INDEX conversation_activity ON conversation(activity);
                -- Each member's read mark: messages after it, from others, are unread.
                CREATE TABLE member (
                    user_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    read_seq INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (user_id, conversation_id)
                ) WITHOUT ROWID;
                CREATE TABLE message (
                    conversation_id TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    id TEXT NOT NULL UNIQUE,
                    sender_id TEXT NOT NULL,
                    text TEXT NOT NULL,
                    sent_at REAL NOT NULL,
                    PRIMARY KEY (conversation_id, seq)
                ) WITHOUT ROWID;
                -- blocker_id does not take messages from blocked_id.
                CREATE TABLE block (
                    blocker_id TEXT NOT NULL,
                    blocked_id TEXT NOT NULL,
                    PRIMARY KEY (blocker_id, blocked_id)
                ) WITHOUT ROWID;
                """)
        }
        // ServiceKit keeps the users deleted (its `deleted_user`), as the other services do.
        migrator.registerMigration("chat-2") { db in
            try db.execute(sql: """
                CREATE TABLE deleted_user (user_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                INSERT INTO deleted_user (user_id) SELECT user_id FROM chat_user WHERE deleted = 1;
                """)
        }
        // Pushes: the devices that get them, the outbox they leave from (written in the
        // message's transaction), muted conversations, the server's VAPID key, and the
        // senders' names for the alert (auth's feed is read again from its start to fill them).
        migrator.registerMigration("chat-3") { db in
            if try db.tableExists("feed_cursor") {
                try db.execute(sql: "UPDATE feed_cursor SET seq = 0 WHERE feed = 'auth'")
            }
            try db.execute(sql: """
                ALTER TABLE chat_user ADD COLUMN display_name TEXT;
                ALTER TABLE member ADD COLUMN muted INTEGER NOT NULL DEFAULT 0;
                -- Messages from others after read_seq, kept as they arrive and are read:
                -- a push's badge sums them without counting messages on every send.
                ALTER TABLE member ADD COLUMN unread INTEGER NOT NULL DEFAULT 0;
                UPDATE member SET unread = (
                    SELECT count(*) FROM message m
                    WHERE m.conversation_id = member.conversation_id AND m.seq > member.read_seq AND m.sender_id != member.user_id);
                -- address: the APNs device token or the Web Push endpoint. session_id: the
                -- session that registered it; the device goes when the session ends.
                CREATE TABLE device (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    session_id TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    address TEXT NOT NULL,
                    environment TEXT,
                    topic TEXT,
                    p256dh BLOB,
                    auth_secret BLOB,
                    lang TEXT,
                    registered_at REAL NOT NULL,
                    UNIQUE (platform, address)
                ) WITHOUT ROWID;
                CREATE INDEX device_user ON device(user_id, registered_at);
                CREATE INDEX device_session ON device(session_id);
                -- One row per push to one device, deleted once it is delivered or given up.
                CREATE TABLE push_outbox (
                    id INTEGER PRIMARY KEY,
                    device_id TEXT NOT NULL REFERENCES device(id) ON DELETE CASCADE,
                    sender_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    notification TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    due_at REAL NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT
                );
                CREATE INDEX push_outbox_due ON push_outbox(due_at);
                CREATE INDEX push_outbox_device ON push_outbox(device_id);
                CREATE TABLE push_key (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    private_key BLOB NOT NULL,
                    created_at REAL NOT NULL
                );
                """)
        }
        // A message is its own push outbox entry: its place among all messages (the
        // activity its conversation took) and the badge its pushes carry (NULL: none);
        // push_cursor is the activity up to which every message has had its first try,
        // and push_outbox keeps only the pushes to be tried again (rows queued before
        // this stay valid there). Messages from before have no activity: never pushed.
        migrator.registerMigration("chat-4") { db in
            try db.execute(sql: """
                ALTER TABLE message ADD COLUMN activity INTEGER;
                ALTER TABLE message ADD COLUMN badge INTEGER;
                CREATE TABLE push_cursor (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    activity INTEGER NOT NULL
                );
                INSERT INTO push_cursor (id, activity) SELECT 1, coalesce(max(activity), 0) FROM conversation;
                """)
        }
    }
}
