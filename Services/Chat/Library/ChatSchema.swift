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
    }
}
