import GRDB

/// Geo's tables. A shipped migration is never changed; later changes are new ones.
enum GeoSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("geo-1") { db in
            try db.execute(sql: """
                -- What geo keeps of each post it follows from catalogue.changes: the
                -- fields of a hit and of its words, read back into memory at start.
                -- tags are joined by U+001F, which a tag cannot hold.
                CREATE TABLE post (
                    id TEXT PRIMARY KEY NOT NULL,
                    owner_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    title TEXT NOT NULL,
                    text TEXT NOT NULL,
                    lat REAL NOT NULL,
                    lon REAL NOT NULL,
                    category TEXT,
                    tags TEXT NOT NULL,
                    ref TEXT,
                    hours TEXT,
                    timezone TEXT,
                    notify_radius REAL,
                    rating_average REAL,
                    rating_count INTEGER NOT NULL,
                    created_at REAL NOT NULL
                );
                """)
        }
        migrator.registerMigration("geo-2") { db in
            try db.execute(sql: """
                -- The saved homes of users who let others find them, from auth.changes.
                CREATE TABLE user_home (
                    user_id TEXT PRIMARY KEY NOT NULL,
                    lat REAL NOT NULL,
                    lon REAL NOT NULL,
                    attributes TEXT NOT NULL
                );
                -- Users auth reported deleted: their tokens are refused.
                CREATE TABLE deleted_user (user_id TEXT PRIMARY KEY NOT NULL);
                """)
        }
        migrator.registerMigration("geo-3") { db in
            try db.execute(sql: """
                -- The fences (posts with a notify radius) each user is in, as of their
                -- last geo.fences.update: what the next update compares against.
                CREATE TABLE fence_inside (
                    user_id TEXT NOT NULL,
                    post_id TEXT NOT NULL,
                    entered_at REAL NOT NULL,
                    PRIMARY KEY (user_id, post_id)
                ) WITHOUT ROWID;
                -- A fence that goes away lets out everyone inside it.
                CREATE INDEX fence_inside_post ON fence_inside(post_id);
                """)
        }
        migrator.registerMigration("geo-4") { db in
            // Homes were kept to the metre; they are kept as their HomeGrid cell now.
            // Following auth's feed again from 0 brings every discoverable home back,
            // snapped, and re-applies every deletion (which applying twice leaves alone).
            try db.execute(sql: """
                DELETE FROM user_home;
                DELETE FROM feed_cursor WHERE feed = 'auth';
                """)
        }
        migrator.registerMigration("geo-5") { db in
            // The posts that notify nearby users, found at start-up without reading every
            // row when the index comes from its snapshot; and the id of the snapshot
            // written at the last clean stop (IndexSnapshot), forgotten once read.
            try db.execute(sql: """
                CREATE INDEX post_fence ON post(notify_radius) WHERE notify_radius IS NOT NULL;
                CREATE TABLE index_snapshot (id TEXT NOT NULL);
                """)
        }
        migrator.registerMigration("geo-6") { db in
            // What a start from an older snapshot of the index needs: the feed seq at
            // which each post last changed, the posts deleted since (by seq; forgotten
            // once a snapshot holds them), and an id of this database that its
            // snapshots name (a copy, such as a restored backup, keeps it, and its
            // older cursor tells it apart). Rows from before count as changed at 0.
            try db.execute(sql: """
                ALTER TABLE post ADD COLUMN changed_seq INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX post_changed ON post(changed_seq);
                CREATE TABLE post_gone (id TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX post_gone_seq ON post_gone(seq);
                CREATE TABLE database_identity (id TEXT NOT NULL);
                INSERT INTO database_identity (id) VALUES (lower(hex(randomblob(16))));
                DROP TABLE index_snapshot;
                """)
        }
    }
}
