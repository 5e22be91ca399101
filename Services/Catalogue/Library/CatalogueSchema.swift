import GRDB

/// Catalogue's tables. A shipped migration is never changed; later changes are new ones.
enum CatalogueSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("catalogue-1") { db in
            try db.execute(sql: """
                -- A post's JSON, as served and as sent on the feed, is written once per
                -- change; the columns beside it are what queries and constraints need.
                -- seq orders by insertion: a new rowid is always above every row there.
                CREATE TABLE post (
                    seq INTEGER PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    owner_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    category TEXT,
                    city_key TEXT,
                    country_code TEXT,
                    ref TEXT,
                    draft_hash BLOB NOT NULL,
                    rating_sum INTEGER NOT NULL DEFAULT 0,
                    rating_count INTEGER NOT NULL DEFAULT 0,
                    json BLOB NOT NULL
                );
                CREATE UNIQUE INDEX post_owner_ref ON post(owner_id, ref) WHERE ref IS NOT NULL;
                CREATE INDEX post_owner ON post(owner_id, seq);
                CREATE INDEX post_kind ON post(kind, seq);
                CREATE INDEX post_category ON post(category, seq) WHERE category IS NOT NULL;
                CREATE INDEX post_place ON post(country_code, city_key, seq) WHERE country_code IS NOT NULL;

                CREATE TABLE image (
                    id TEXT PRIMARY KEY NOT NULL,
                    post_id TEXT NOT NULL REFERENCES post(id) ON DELETE CASCADE,
                    position INTEGER NOT NULL,
                    content_type TEXT NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    bytes INTEGER NOT NULL,
                    data BLOB NOT NULL
                );
                CREATE INDEX image_post ON image(post_id, position);

                CREATE TABLE rating (
                    post_id TEXT NOT NULL REFERENCES post(id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    stars INTEGER NOT NULL,
                    PRIMARY KEY (post_id, user_id)
                ) WITHOUT ROWID;
                CREATE INDEX rating_user ON rating(user_id);

                CREATE TABLE trip (
                    id TEXT PRIMARY KEY NOT NULL,
                    owner_id TEXT NOT NULL,
                    title TEXT NOT NULL,
                    city TEXT NOT NULL,
                    country_code TEXT NOT NULL,
                    lat REAL,
                    lon REAL,
                    start_date TEXT,
                    end_date TEXT,
                    created_at REAL NOT NULL
                );
                CREATE TABLE trip_member (
                    trip_id TEXT NOT NULL REFERENCES trip(id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    role TEXT NOT NULL,
                    joined_at REAL NOT NULL,
                    PRIMARY KEY (trip_id, user_id)
                ) WITHOUT ROWID;
                CREATE INDEX trip_member_user ON trip_member(user_id);

                -- Users as auth's feed reports them: who exists (for invitations), who was deleted.
                CREATE TABLE known_user (user_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                CREATE TABLE deleted_user (user_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("catalogue-2") { db in
            // An invited buddy is on the trip only once they accept: until then their row has the role
            // 'invited', an invited_at and no joined_at. Members from before were added without asking.
            try db.execute(sql: """
                CREATE TABLE trip_member_new (
                    trip_id TEXT NOT NULL REFERENCES trip(id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    role TEXT NOT NULL,
                    invited_at REAL,
                    joined_at REAL,
                    PRIMARY KEY (trip_id, user_id)
                ) WITHOUT ROWID;
                INSERT INTO trip_member_new (trip_id, user_id, role, invited_at, joined_at)
                    SELECT trip_id, user_id, role, NULL, joined_at FROM trip_member;
                DROP TABLE trip_member;
                ALTER TABLE trip_member_new RENAME TO trip_member;
                CREATE INDEX trip_member_user ON trip_member(user_id);
                """)
        }
    }
}
