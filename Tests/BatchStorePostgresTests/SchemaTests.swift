import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// The schema read from the catalogs of a database made with psql: kinds of relations, keys,
/// foreign keys with their ON DELETE rules, and every mapped column type read as its value kind.
@Suite("PostgreSQL schema from the catalogs", .tags(.postgres), .timeLimit(slowTestLimit))
struct SchemaTests {
    static let schemaSQL = #"""
        CREATE TYPE mood AS ENUM ('sad', 'happy');
        CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
        CREATE DOMAIN smallpos AS posint CHECK (VALUE < 1000);
        CREATE TABLE director (id serial PRIMARY KEY, name text NOT NULL UNIQUE);
        CREATE TABLE movie (
            id bigint PRIMARY KEY, title varchar(200) NOT NULL,
            director_id integer REFERENCES director ON DELETE SET NULL,
            year smallint, rating real, score double precision, budget numeric(12,2), released date,
            shown_at timestamp, updated_at timestamptz, starts time, meta json, doc jsonb, uid uuid,
            poster bytea, watched boolean DEFAULT false, tags text[], scores integer[], feeling mood,
            votes posint, rank smallpos, code char(3), span interval, price money, owner oid,
            doubled bigint GENERATED ALWAYS AS (id * 2) STORED
        );
        CREATE INDEX movie_year ON movie (year);
        CREATE UNIQUE INDEX movie_lower_title ON movie (lower(title));
        CREATE UNIQUE INDEX movie_recent ON movie (uid) WHERE year > 2000;
        CREATE TABLE review (movie_id bigint REFERENCES movie ON DELETE CASCADE, reviewer text, body text,
                             PRIMARY KEY (movie_id, reviewer));
        CREATE TABLE award (
            id integer PRIMARY KEY, movie_id bigint NOT NULL REFERENCES movie ON DELETE RESTRICT,
            review_movie bigint, review_by text, presenter integer REFERENCES director,
            host integer REFERENCES director ON DELETE SET DEFAULT,
            FOREIGN KEY (review_movie, review_by) REFERENCES review ON DELETE CASCADE,
            UNIQUE (movie_id, review_by)
        );
        CREATE TABLE log (at timestamptz, line text);
        CREATE VIEW recent AS SELECT id, title FROM movie WHERE year > 2000;
        CREATE MATERIALIZED VIEW counts AS SELECT director_id, count(*) AS n FROM movie GROUP BY director_id;
        CREATE TABLE part (id int, at date) PARTITION BY RANGE (at);
        CREATE TABLE part_2024 PARTITION OF part FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
        CREATE SCHEMA other;
        CREATE TABLE other.thing (id int PRIMARY KEY, movie_id bigint REFERENCES public.movie);
        CREATE TABLE other.movie (id int PRIMARY KEY);
        CREATE TABLE "Odd ""Name""" ("a b" int PRIMARY KEY);
        ALTER TABLE movie DROP COLUMN span;
        ALTER TABLE movie ADD COLUMN span interval;
        """#

    static func store(_ server: PostgresServer) throws -> PostgresStore {
        let database = try server.makeDatabase("schema", sql: schemaSQL)
        return try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
    }

    @Test("tables first, then views, each by name; other schemas qualified; partitions and system tables left out")
    func relations() throws {
        let store = try Self.store(try PostgresServer.require())
        #expect(store.schema.tables.map(\.name) == ["Odd \"Name\"", "award", "director", "log", "movie", "other.movie", "other.thing", "part", "review", "counts", "recent"])
        #expect(store.schema.tables.map(\.kind) == [.table, .table, .table, .table, .table, .table, .table, .partitionedTable, .table, .materializedView, .view])
        #expect(store.schema.table(named: "movie")?.schemaName == "public")
        #expect(store.schema.table(named: "other.movie")?.schemaName == "other")
        #expect(store.schema.table(named: "public.movie")?.qualifiedSQL == "\"public\".\"movie\"")
        #expect(store.schema.table(named: "MOVIE")?.name == "movie")
        #expect(try store.table(named: "Odd \"Name\"").qualifiedSQL == "\"public\".\"Odd \"\"Name\"\"\"")
        #expect(store.name == store.url.database)
        #expect(store.serverVersion.contains("."))
        #expect(throws: BatchStoreError(.noSuchEntity, "no table or view named \"nope\" (tables and views: Odd \"Name\", award, director, log, movie, other.movie, other.thing, part, review, counts, recent)")) {
            try store.table(named: "nope")
        }
    }

    @Test("keys: single and composite primary keys, ctid for a table without one (read-only), none for views and partitioned tables")
    func keys() throws {
        let store = try Self.store(try PostgresServer.require())
        let movie = try store.table(named: "movie")
        #expect(movie.primaryKey == ["id"])
        #expect(movie.rowKey == .primaryKey(["id"]))
        #expect(!movie.isReadOnly && movie.readOnlyReason == nil)
        let review = try store.table(named: "review")
        #expect(review.rowKey == .primaryKey(["movie_id", "reviewer"]))
        #expect(review.columns.map(\.primaryKeyPosition) == [1, 2, nil])
        let log = try store.table(named: "log")
        #expect(log.rowKey == .ctid)
        #expect(log.primaryKey.isEmpty && log.isReadOnly)
        #expect(log.readOnlyReason == "log has no primary key (its rows are browsed by ctid, which moves when a row is updated)")
        #expect(try store.table(named: "recent").rowKey == .none)
        #expect(try store.table(named: "recent").readOnlyReason == "recent is a view")
        #expect(try store.table(named: "counts").readOnlyReason == "counts is a materialized view")
        #expect(try store.table(named: "part").rowKey == .none)
        #expect(try store.table(named: "part").readOnlyReason == "part has no primary key")
        // Unique sets: the primary key first, then UNIQUE constraints and plain unique indexes;
        // not an expression index nor a partial one.
        #expect(try store.table(named: "director").uniquenessConstraints == [["id"], ["name"]])
        #expect(try store.table(named: "award").uniquenessConstraints == [["id"], ["movie_id", "review_by"]])
        #expect(movie.uniquenessConstraints == [["id"]])
        #expect(movie.indexedColumns == ["id", "year", "uid"])
    }

    @Test("foreign keys: destination, columns, and CASCADE / SET NULL / RESTRICT / NO ACTION / SET DEFAULT, named as SQLite stores name them")
    func foreignKeys() throws {
        let store = try Self.store(try PostgresServer.require())
        let movie = try store.table(named: "movie")
        #expect(movie.relationships.map(\.name) == ["director"])
        let director = try #require(movie.relationship(named: "director"))
        #expect(director.destinationEntityName == "director")
        #expect(director.sourceColumns == ["director_id"] && director.destinationColumns == ["id"])
        #expect(director.deleteRule == .nullify)
        #expect(try store.table(named: "review").relationship(named: "movie")?.deleteRule == .cascade)
        let award = try store.table(named: "award")
        #expect(award.relationships.map(\.name) == ["movie", "presenter", "host", "review"])
        #expect(award.relationships.map(\.deleteRule) == [.deny, .noAction, .setDefault, .cascade])
        let review = try #require(award.relationship(named: "review"))
        #expect(review.destinationEntityName == "review")
        #expect(review.sourceColumns == ["review_movie", "review_by"])
        #expect(review.destinationColumns == ["movie_id", "reviewer"])
        #expect(award.relationship(named: "movie_id")?.name == "movie", "found by its column too")
        // Across schemas: the destination named as the store names tables.
        #expect(try store.table(named: "other.thing").relationships.map(\.destinationEntityName) == ["movie"])
    }

    @Test("column facts: declared types, domains by their base type, NOT NULL, defaults, generated columns, dropped columns left out")
    func columns() throws {
        let store = try Self.store(try PostgresServer.require())
        let movie = try store.table(named: "movie")
        #expect(movie.columns.map(\.name) == ["id", "title", "director_id", "year", "rating", "score", "budget", "released", "shown_at",
                                              "updated_at", "starts", "meta", "doc", "uid", "poster", "watched", "tags", "scores",
                                              "feeling", "votes", "rank", "code", "price", "owner", "doubled", "span"])
        let declared = Dictionary(uniqueKeysWithValues: movie.columns.map { ($0.name, $0.declaredType) })
        #expect(declared["title"] == "character varying(200)")
        #expect(declared["budget"] == "numeric(12,2)")
        #expect(declared["updated_at"] == "timestamp with time zone")
        #expect(declared["scores"] == "integer[]")
        #expect(declared["feeling"] == "mood")
        #expect(declared["rank"] == "smallpos")
        let rank = try #require(movie.column(named: "rank"))
        #expect(rank.baseTypeOID == 23 && rank.typeOID != 23, "a domain over a domain over integer")
        #expect(movie.column(named: "title")?.isNotNull == true)
        #expect(movie.column(named: "year")?.isNotNull == false)
        #expect(movie.column(named: "watched")?.defaultValueSQL == "false")
        #expect(try store.table(named: "director").column(named: "id")?.defaultValueSQL == "nextval('director_id_seq'::regclass)")
        #expect(movie.column(named: "doubled")?.isGenerated == true)
        #expect(movie.column(named: "id")?.isGenerated == false)
    }

    static let expectedKinds: [String: PostgresValueKind] = [
        "id": .integer, "title": .text, "director_id": .integer, "year": .integer, "rating": .real, "score": .real,
        "budget": .numeric, "released": .timestamp, "shown_at": .timestamp, "updated_at": .timestamp, "starts": .timestamp,
        "meta": .json, "doc": .json, "uid": .uuid, "poster": .blob, "watched": .boolean, "tags": .array, "scores": .array,
        "feeling": .text, "votes": .integer, "rank": .integer, "code": .text, "price": .text, "owner": .integer,
        "doubled": .integer, "span": .text,
    ]

    @Test("every mapped type is read as its kind's value, through the columns' select expressions")
    func everyTypeRead() throws {
        let server = try PostgresServer.require()
        let store = try Self.store(server)
        try server.psql("""
            INSERT INTO director (name) VALUES ('Ann');
            INSERT INTO movie (id, title, director_id, year, rating, score, budget, released, shown_at, updated_at, starts,
                               meta, doc, uid, poster, watched, tags, scores, feeling, votes, rank, code, span, price, owner)
            VALUES (21, 'Heat', 1, 1995, 7.5, 8.25, 1234567.5, '1995-12-15', '1995-12-15 20:15:00', '1995-12-15 20:15:00+02',
                    '20:15', '{"a":  1}', '{"b": [1, 2], "a": 1}', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '\\x00ff10',
                    true, ARRAY['a', 'b c'], ARRAY[1, 2, 3], 'happy', 5, 7, 'ab', '1 day 2 hours', 12.5, 4242);
            INSERT INTO movie (id, title) VALUES (22, 'Empty');
            """, database: store.url.database)
        let movie = try store.table(named: "movie")
        #expect(Dictionary(uniqueKeysWithValues: movie.columns.map { ($0.name, $0.kind) }) == Self.expectedKinds)
        let session = try store.openSession()
        defer { session.close() }
        let select = movie.columns.map { $0.selectExpression() }.joined(separator: ", ")
        let rows = try session.query("SELECT \(select) FROM \(movie.qualifiedSQL) AS t ORDER BY t.id")
        #expect(rows.count == 2)
        let full = Dictionary(uniqueKeysWithValues: zip(movie.columns.map(\.name), rows[0]))
        let expected: [String: SQLValue] = [
            "id": .integer(21), "title": .text("Heat"), "director_id": .integer(1), "year": .integer(1995), "rating": .real(7.5),
            "score": .real(8.25), "budget": .text("1234567.50"), "released": .text("1995-12-15"),
            "shown_at": .text("1995-12-15 20:15:00"), "updated_at": .text("1995-12-15 18:15:00+00"), "starts": .text("20:15:00"),
            "meta": .text("{\"a\":  1}"), "doc": .text("{\"a\": 1, \"b\": [1, 2]}"), "uid": .text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            "poster": .blob(Data([0x00, 0xff, 0x10])), "watched": .integer(1), "tags": .text("{a,\"b c\"}"), "scores": .text("{1,2,3}"),
            "feeling": .text("happy"), "votes": .integer(5), "rank": .integer(7), "code": .text("ab"), "span": .text("1 day 02:00:00"),
            "price": .text("$12.50"), "owner": .integer(4242), "doubled": .integer(42),
        ]
        #expect(full == expected)
        for (column, value) in zip(movie.columns, rows[0]) {
            #expect(value.storageClass == column.kind.storageClass, "\(column.name)")
        }
        // The second row: NULL in every column it did not set.
        let empty = Dictionary(uniqueKeysWithValues: zip(movie.columns.map(\.name), rows[1]))
        #expect(empty.filter { !$0.value.isNull }.keys.sorted() == ["doubled", "id", "title", "watched"])
        #expect(empty["watched"] == .integer(0))
    }
}
