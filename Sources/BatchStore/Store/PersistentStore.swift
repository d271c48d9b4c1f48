import CSQLiteShims
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// One SQLite file, opened read-write or read-only, with its schema read once as entities.
///
/// A store is `Sendable`: hand it to any thread and make a ``ManagedObjectContext`` there. Each
/// context opens its own SQLite connection on the store's file.
public final class PersistentStore: Sendable {
    /// How to open a store.
    public struct Options: Sendable {
        /// Open read-only: every write is refused before SQLite sees it.
        public var readOnly: Bool
        /// Create the file when it does not exist. Off by default: a missing path is an error.
        public var create: Bool
        /// How long a connection waits for another writer before giving up, in seconds.
        public var busyTimeout: Double
        /// The store's name in object IDs; defaults to the file name without its extension.
        public var name: String?
        /// Switch the file to WAL journaling on open (only done when asked: it changes the file).
        public var useWAL: Bool
        /// Switch the file to WAL journaling just before a context's first write (a batch request,
        /// `save()`, `undo()`), not on open: a session that only reads leaves the file as it was.
        public var walAtFirstWrite: Bool
        /// One read-only SQL query (a SELECT, WITH … SELECT or VALUES) whose result the store
        /// offers as one more read-only entity, ``PersistentStore/queryEntity``: browsed, filtered,
        /// sorted, searched and exported like a view, its rows kept by position. Anything else
        /// (a write, a PRAGMA, ATTACH, a second statement) is refused when the store opens.
        public var query: String?

        public init(readOnly: Bool = false, create: Bool = false, busyTimeout: Double = 5, name: String? = nil, useWAL: Bool = false,
                    walAtFirstWrite: Bool = false, query: String? = nil) {
            self.query = query
            self.readOnly = readOnly
            self.create = create
            self.busyTimeout = busyTimeout
            self.name = name
            self.useWAL = useWAL
            self.walAtFirstWrite = walAtFirstWrite
        }
    }

    /// The file's path as given.
    public let path: String
    /// The store's name, used in object IDs.
    public let name: String
    /// True when opened read-only or when the file itself cannot be written.
    public let isReadOnly: Bool
    /// Tables and views, read when the store was opened, then the results of ``Options/query`` and
    /// of each ``addQuery(_:arguments:)``.
    public var schema: Schema { schemaState.withLock { $0 } }
    let schemaState: Mutex<Schema>
    /// The entity of ``Options/query``'s result, or nil.
    public var queryEntity: Entity? { options.query == nil ? nil : schema.entities.first { $0.query != nil } }
    let options: Options

    /// Opens the SQLite file at `path`.
    ///
    /// Reads the schema with `pragma_table_list`, `pragma_table_xinfo`, `pragma_index_list` and
    /// `pragma_foreign_key_list`: cost grows with the number of tables, not rows.
    /// - Throws: ``BatchStoreError`` `.fileNotFound` for a missing path (unless `options.create`),
    ///   `.notADatabase` for a directory or a file that is not SQLite.
    public init(path: String, options: Options = Options()) throws {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if exists && isDirectory.boolValue {
            throw BatchStoreError(.notADatabase, "\(path): is a directory, not a database file")
        }
        if !exists {
            if !options.create || options.readOnly {
                throw BatchStoreError(.fileNotFound, "\(path): no such file")
            }
        }
        self.path = path
        self.options = options
        let base = (path as NSString).lastPathComponent
        let storeName = options.name ?? ((base as NSString).deletingPathExtension.isEmpty ? base : (base as NSString).deletingPathExtension)
        self.name = storeName
        do {
            let queue = try Self.openQueue(path: path, options: options)
            let (schema, readOnly) = try queue.inDatabase { db -> (Schema, Bool) in
                if options.useWAL && !options.readOnly && sqlite3_db_readonly(db.sqliteConnection, "main") != 1 {
                    // Where the file allows it: a read-only directory or a locked file keeps its mode.
                    _ = try? String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                }
                var schema = try Self.readSchema(db, storeName: storeName)
                if let query = options.query {
                    let taken = Set(schema.entities.map { $0.name.lowercased() })
                    var name = Self.queryEntityName, n = 1
                    while taken.contains(name) { n += 1; name = "\(Self.queryEntityName)_\(n)" }
                    let entity = try Self.queryEntity(db, sql: query, name: name, storeName: storeName, schema: schema)
                    schema = Schema(entities: schema.entities + [entity], unreadableViews: schema.unreadableViews)
                }
                let readOnly = options.readOnly || sqlite3_db_readonly(db.sqliteConnection, "main") == 1
                return (schema, readOnly)
            }
            self.schemaState = Mutex(schema)
            self.isReadOnly = readOnly
        } catch {
            throw BatchStoreError.wrap(error, context: path)
        }
        fileIdentity = Self.identity(of: path)
    }

    /// The file's device and inode when the store opened it (nil: an in-memory or temporary database).
    let fileIdentity: FileIdentity?

    struct FileIdentity: Equatable {
        let device: UInt64
        let inode: UInt64
    }

    static func identity(of path: String) -> FileIdentity? {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return nil }
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Why the file this store opened is no longer the one at its path, or nil: deleted, or
    /// replaced by another file (a copy moved over it, a download saved again). The store's
    /// connections still read and write the file they opened, which nothing else can open any
    /// more: a browser says so, and refuses edits that would be lost with it.
    public var fileProblem: String? {
        guard let opened = fileIdentity else { return nil }
        var info = stat()
        if stat(path, &info) != 0 {
            return errno == ENOENT ? "\(path) was deleted since it was opened" : nil
        }
        guard FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) == opened else {
            return "\(path) was replaced by another file since it was opened"
        }
        return nil
    }

    /// Convenience for `init(path:options:)` with `create: true`.
    public static func create(path: String, name: String? = nil) throws -> PersistentStore {
        try PersistentStore(path: path, options: Options(create: true, name: name, useWAL: true))
    }

    /// The entity named `name`, or a `.noSuchEntity` error that lists what exists.
    public func entity(named name: String) throws -> Entity {
        if let e = schema.entity(named: name) { return e }
        if let reason = schema.unreadableViews.first(where: { $0.key.caseInsensitiveCompare(name) == .orderedSame })?.value {
            throw BatchStoreError(.invalidQuery, "the view \(name.debugDescription) cannot be read: \(reason)")
        }
        let names = schema.entities.map(\.name)
        let known = names.isEmpty ? "the database has no tables" : "tables and views: " + names.prefix(12).joined(separator: ", ")
        throw BatchStoreError(.noSuchEntity, "no table or view named \(name.debugDescription) (\(known))")
    }

    /// Opens a new connection on the file with the store's options. Used by each context.
    func openConnection() throws -> DatabaseQueue {
        do {
            return try Self.openQueue(path: path, options: Options(readOnly: isReadOnly, create: false, busyTimeout: options.busyTimeout, name: name))
        } catch {
            throw BatchStoreError.wrap(error, context: path)
        }
    }

    /// Multi-thread mode, once, before the first connection: GRDB already serialises each
    /// connection, so SQLite's own per-call mutex only costs time (8% of a full sweep).
    private static let threadingConfigured: Bool = bs_configure_multithread() == SQLITE_OK

    static func openQueue(path: String, options: Options) throws -> DatabaseQueue {
        _ = threadingConfigured
        var config = Configuration()
        config.readonly = options.readOnly
        config.busyMode = .timeout(options.busyTimeout)
        config.foreignKeysEnabled = true
        config.label = "BatchStore"
        config.prepareDatabase { db in
            // Files are untrusted: no schema-level functions with side effects, no extensions,
            // no writes to shadow tables or the schema through SQL.
            _ = bs_enable_defensive(db.sqliteConnection)
            _ = bs_disable_trusted_schema(db.sqliteConnection)
            _ = bs_disable_load_extension(db.sqliteConnection)
            SQLFunctions.register(in: db)
            // After a huge batch, checkpoints truncate the WAL (or journal) back to 64 MiB instead of
            // leaving a file as big as the batch behind.
            try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
        }
        return try DatabaseQueue(path: path, configuration: config)
    }

    // MARK: - Schema

    static func readSchema(_ db: Database, storeName: String) throws -> Schema {
        // pragma_table_list gives the WITHOUT ROWID flag (SQLite 3.37+).
        let rows = try Row.fetchAll(db, sql: """
            SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main'
              AND type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
            ORDER BY type = 'view', name
            """)
        var entities: [Entity] = []
        var unreadable: [String: String] = [:]
        for row in rows {
            let name: String = row["name"]
            let type: String = row["type"]
            let withoutRowid: Bool = row["wr"]
            let kind: Entity.Kind = type == "view" ? .view : (withoutRowid ? .withoutRowidTable : .table)
            do {
                entities.append(try readEntity(db, name: name, kind: kind, storeName: storeName))
            } catch let error as DatabaseError where kind == .view {
                // One bad view must not make the whole file unreadable.
                unreadable[name] = error.message ?? "\(error.resultCode)"
            }
        }
        return Schema(entities: entities, unreadableViews: unreadable)
    }

    static func readEntity(_ db: Database, name: String, kind: Entity.Kind, storeName: String) throws -> Entity {
        let columns = try Row.fetchAll(db, sql: "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?, 'main') ORDER BY cid", arguments: [name])
        var attributes: [Attribute] = []
        for c in columns {
            let hidden: Int = c["hidden"] ?? 0
            if hidden == 1 { continue } // hidden columns of virtual tables
            let pk: Int = c["pk"] ?? 0
            attributes.append(Attribute(
                name: c["name"] ?? "",
                declaredType: c["type"] ?? "",
                isNotNull: c["notnull"] ?? false,
                defaultValueSQL: c["dflt_value"],
                primaryKeyPosition: pk > 0 ? pk : nil,
                isGenerated: hidden == 2 || hidden == 3))
        }
        var unique: [[String]] = []
        var indexed = Set<String>()
        if kind != .view {
            let indexes = try Row.fetchAll(db, sql: "SELECT name, \"unique\", partial FROM pragma_index_list(?, 'main')", arguments: [name])
            for index in indexes {
                let indexName: String = index["name"]
                let cols = try String?.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?, 'main') ORDER BY seqno", arguments: [indexName])
                if let first = cols.first, let first { indexed.insert(first) }
                let isUnique: Bool = index["unique"]
                let isPartial: Bool = index["partial"]
                if isUnique && !isPartial && !cols.contains(where: { $0 == nil }) {
                    unique.append(cols.compactMap { $0 })
                }
            }
            let pk = attributes.compactMap { a in a.primaryKeyPosition.map { (position: $0, name: a.name) } }.sorted { $0.position < $1.position }.map(\.name)
            if !pk.isEmpty {
                indexed.insert(pk[0])
                if !unique.contains(pk) { unique.insert(pk, at: 0) }
            }
        }
        var relationships: [Relationship] = []
        if kind != .view {
            let fks = try Row.fetchAll(db, sql: "SELECT id, seq, \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list(?, 'main') ORDER BY id, seq", arguments: [name])
            var grouped: [(id: Int, table: String, from: [String], to: [String], onDelete: String)] = []
            for fk in fks {
                let id: Int = fk["id"]
                if grouped.last?.id != id {
                    grouped.append((id, fk["table"], [], [], fk["on_delete"] ?? "NO ACTION"))
                }
                grouped[grouped.count - 1].from.append(fk["from"])
                if let to: String = fk["to"] { grouped[grouped.count - 1].to.append(to) }
            }
            // pragma lists the last declared first
            relationships = Relationship.fromForeignKeys(grouped.reversed().map {
                Relationship.ForeignKey(destination: $0.table, sourceColumns: $0.from, destinationColumns: $0.to,
                                        deleteRule: DeleteRule(sqliteAction: $0.onDelete))
            })
        }
        return Entity(name: name, kind: kind, storeName: storeName, attributes: attributes,
                      uniquenessConstraints: unique, relationships: relationships, indexedColumns: indexed)
    }
}
