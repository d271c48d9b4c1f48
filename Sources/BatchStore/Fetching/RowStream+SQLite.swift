import Foundation
import GRDB
import GRDBSQLite

/// A context whose rows stream in place, read from SQLite's statement without a copy (SQLite:
/// one store or several). Another engine streams values (``ValueStreamingContext``).
public protocol InPlaceStreamingContext: FetchingContext {
    /// Streams the rows `request` matches (in every store), in its order, forward only, as one
    /// statement: no ID table and no objects (see ``ManagedObjectContext/streamRows(_:_:)``).
    func streamRows(_ request: FetchRequest, _ body: (StreamedRow) throws -> Void) throws
}

extension FetchingContext {
    /// The rows of `request`, one statement, forward only: read in place (`inPlace`) where the
    /// engine reads them so (an ``InPlaceStreamingContext``: SQLite, one store or several), else
    /// as values (`values`, a ``ValueStreamingContext``: PostgreSQL). What a writer of rows
    /// (export, `:w`, `y`) calls.
    /// - Throws: `.invalidArgument` for a context that streams neither way.
    public func streamRows(_ request: FetchRequest, inPlace: (StreamedRow) throws -> Void, values: ([SQLValue]) throws -> Void) throws {
        if let streaming = self as? any ValueStreamingContext {
            try streaming.streamValues(request, values)
        } else if let streaming = self as? any InPlaceStreamingContext {
            try streaming.streamRows(request, inPlace)
        } else {
            throw BatchStoreError(.invalidArgument, "this context cannot stream rows")
        }
    }
}

/// One row of ``InPlaceStreamingContext/streamRows(_:_:)``: the entity's columns, in its column order,
/// read from the statement in place. Valid only during the body call that receives it; copy out
/// what must outlive it (``StreamedValue/sqlValue``, ``values``).
public struct StreamedRow {
    private let statement: OpaquePointer
    private let first: Int32
    /// The number of values (the entity's columns).
    public let count: Int
    /// The index in ``FetchingContext/storeNames`` of the store the row comes from (0 for one store).
    public let storeIndex: Int

    init(statement: OpaquePointer, first: Int32, count: Int, storeIndex: Int) {
        self.statement = statement
        self.first = first
        self.count = count
        self.storeIndex = storeIndex
    }

    /// The value of column `index` (0 ..< ``count``), in place.
    @inline(__always)
    public subscript(index: Int) -> StreamedValue {
        precondition(index >= 0 && index < count, "StreamedRow: column \(index) out of 0..<\(count)")
        let value = sqlite3_column_value(statement, first + Int32(index))
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            let bytes = sqlite3_value_text(value)
            let length = Int(sqlite3_value_bytes(value))
            return .text(UnsafeBufferPointer(start: length > 0 ? bytes : nil, count: bytes == nil ? 0 : length))
        case SQLITE_BLOB:
            let bytes = sqlite3_value_blob(value)
            let length = Int(sqlite3_value_bytes(value))
            return .blob(UnsafeRawBufferPointer(start: length > 0 ? bytes : nil, count: bytes == nil ? 0 : length))
        default: return .null
        }
    }

    /// Every value, copied out.
    public var values: [SQLValue] { (0..<count).map { self[$0].sqlValue } }
}

extension IDQuery {
    /// The rows themselves, in result order, instead of their keys: the ID query's FROM, WHERE,
    /// ORDER BY and LIMIT with `columns` (by name, in each store) as the SELECT list; with several
    /// stores, the store index first.
    static func rows(_ request: FetchRequest, parts: [Part], columns: [String]) throws -> IDQuery {
        try request.checkBounds()
        precondition(!parts.isEmpty, "a row query needs at least one store")
        func check(_ part: Part) throws {
            for name in columns where !part.entity.attributes.contains(where: { $0.name == name }) {
                throw BatchStoreError(.invalidQuery, "\(part.entity.storeName): \(part.entity.name) has no column \(name.debugDescription)")
            }
        }
        let list = columns.isEmpty ? "NULL" : qualified(columns).joined(separator: ", ")
        if parts.count == 1, parts[0].storeIndex == nil {
            let part = parts[0]
            try check(part)
            let compiled = try CompiledFetch(request: request, entity: part.entity, schema: part.schema, databaseName: part.databaseName)
            return IDQuery(select: "SELECT \(list)\(compiled.fromWhereOrder)\(compiled.limitClause)", arguments: compiled.allArguments)
        }
        var selects: [String] = []
        var arguments: [SQLValue] = []
        for part in parts {
            try check(part)
            try requireOneRowKey(part.entity, entityName: request.entityName)
            let builder = QueryBuilder(entity: part.entity, schema: part.schema, databaseName: part.databaseName)
            let values = qualified(columns).enumerated().map { "\($1) AS c\($0)" }
            let sortColumns = try request.sortDescriptors.enumerated().map { "\(try builder.column(for: $1.keyPath)) AS o\($0)" }
            let condition = try request.predicate.map { " WHERE " + (try builder.compile($0.node)) } ?? ""
            selects.append("SELECT \(part.storeIndex ?? 0) AS s, \(builder.keyColumnsSQL[0]) AS k\((values + sortColumns).map { ", " + $0 }.joined()) FROM \(builder.fromClause)\(condition)")
            arguments += builder.arguments
        }
        var limit = ""
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            limit = " LIMIT \(request.fetchLimit > 0 ? request.fetchLimit : -1) OFFSET \(request.fetchOffset)"
        }
        let order = request.sortDescriptors.enumerated().map { "o\($0) \($1.ascending ? "ASC" : "DESC")" } + ["s ASC", "k ASC"]
        let out = (0..<columns.count).map { ", c\($0)" }.joined()
        return IDQuery(select: "SELECT s\(out) FROM (\(selects.joined(separator: " UNION ALL "))) ORDER BY \(order.joined(separator: ", "))\(limit)",
                       arguments: arguments)
    }

    /// Steps the row query on `db`, giving each row to `body` until it returns false or the rows
    /// end. With `storeColumn`, the first column is the store index; else every row is `store`'s.
    func stream(in db: Database, columns: Int, storeColumn: Bool, store: Int = 0, _ body: (StreamedRow) throws -> Bool) throws {
        let statement = try db.makeStatement(sql: select).bound(arguments)
        // The GRDB statement owns (and finalizes) the SQLite one: keep it alive while stepping.
        try withExtendedLifetime(statement) {
            let stmt = statement.sqliteStatement
            defer { sqlite3_reset(stmt) }
            while try db.stepRow(stmt, sql: select) {
                let index = storeColumn ? Int(sqlite3_column_int64(stmt, 0)) : store
                guard try body(StreamedRow(statement: stmt, first: storeColumn ? 1 : 0, count: columns, storeIndex: index)) else { return }
            }
        }
    }
}

extension ManagedObjectContext: InPlaceStreamingContext {
    /// Streams the rows `request` matches, in its order, forward only, as one SQLite statement:
    /// one consistent read of the file, no ID table, no objects, nothing registered, memory flat
    /// whatever the row count (SQLite's sorter spills to temporary files for a large sort). For
    /// an export or any pass that reads every row once; a result that is scrolled, searched or
    /// edited is a ``BatchFaultingCollection``.
    ///
    /// Like Core Data's dictionary results, it reads the saved rows: it refuses a context (or
    /// parent) with unsaved changes. `fetchBatchSize` is ignored. `body` must not use this context.
    /// - Throws: `.invalidArgument` for unsaved changes; SQLite errors; what `body` throws (which
    ///   stops the stream).
    public func streamRows(_ request: FetchRequest, _ body: (StreamedRow) throws -> Void) throws {
        var chain: ManagedObjectContext? = self
        while let context = chain {
            if context.hasChanges {
                throw BatchStoreError(.invalidArgument, "streamRows reads the saved rows: save or roll back the context's unsaved changes first")
            }
            chain = context.parent
        }
        let entity = try store.entity(named: request.entityName)
        let columns = entity.attributes.map(\.name)
        let query = try IDQuery.rows(request, parts: [IDQuery.Part(entity: entity, schema: store.schema, databaseName: "main", storeIndex: nil)],
                                     columns: columns)
        try withDatabase { db in try query.stream(in: db, columns: columns.count, storeColumn: false) { try body($0); return true } }
    }
}
