import GRDB

/// Favourites' tables. A shipped migration is never changed; later changes are new ones.
enum FavouritesSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("favourites-1") { db in
            try db.execute(sql: """
                -- The ids of the posts catalogue has, from catalogue.changes: a favourite
                -- may only name one of them.
                CREATE TABLE known_post (id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                -- Each user's saved posts. seq orders by insertion (newest first in
                -- lists) and is never reused, so a page cursor stays meaningful.
                CREATE TABLE favourite (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id TEXT NOT NULL,
                    post_id TEXT NOT NULL,
                    added_at REAL NOT NULL,
                    UNIQUE (user_id, post_id)
                );
                CREATE INDEX favourite_user ON favourite(user_id, seq);
                -- A deleted post leaves every list.
                CREATE INDEX favourite_post ON favourite(post_id);
                -- Users auth reported deleted: their tokens are refused.
                CREATE TABLE deleted_user (user_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                """)
        }
    }
}
