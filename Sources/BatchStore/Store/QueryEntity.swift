import Foundation
import GRDB
import GRDBSQLite

/// The result of one read-only SQL query as an entity: its columns are the query's result
/// columns, its rows have no stable key (they are kept by position, like a view's), and every read
/// a result makes of it (the ID fetch, filters, sorts, searches, frequencies, exports) names it
/// as the subquery `(<query>) AS t`.
extension PersistentStore {
    /// What a query entity is called when no table is (the next free `query_2`, `query_3`… else).
    public static let queryEntityName = "query"

    /// Checks that `sql` is one statement that only reads, and answers the entity of its result.
    ///
    /// Refused, each with one line naming why, before anything runs: an empty text, more than one
    /// statement, a statement SQLite does not call read-only (`sqlite3_stmt_readonly`), and any
    /// statement that is not a SELECT, WITH … SELECT or VALUES: PRAGMA, ATTACH, DETACH, BEGIN,
    /// EXPLAIN and the rest; also a NUL byte, and `pragma_optimize` (the one table-valued pragma
    /// that writes). SQLite's own error names the character it failed at when it knows it.
    static func queryEntity(_ db: Database, sql: String, name: String, storeName: String, schema: Schema) throws -> Entity {
        let text = try checkedQuery(db, sql)
        // The columns as the wrapped query names them (SQLite makes duplicate names unique with
        // `:1`, `:2`…, as for a view); their declared types where a column is a table's column.
        var stmt: OpaquePointer?
        let probe = "SELECT * FROM (\(text)) LIMIT 0"
        guard sqlite3_prepare_v2(db.sqliteConnection, probe, -1, &stmt, nil) == SQLITE_OK, let stmt else {
            // The query alone prepared: what fails once it is wrapped is a comment left open.
            if String(cString: sqlite3_errmsg(db.sqliteConnection)) == "incomplete input" {
                throw BatchStoreError(.invalidQuery, "the query ends inside a /* comment; close it with */")
            }
            throw queryError(db, in: nil)
        }
        defer { sqlite3_finalize(stmt) }
        var attributes: [Attribute] = []
        for i in 0..<sqlite3_column_count(stmt) {
            let column = sqlite3_column_name(stmt, i).map { String(cString: $0) } ?? "column\(i + 1)"
            let declared = sqlite3_column_decltype(stmt, i).map { String(cString: $0) } ?? ""
            attributes.append(Attribute(name: column, declaredType: declared, isNotNull: false, defaultValueSQL: nil, primaryKeyPosition: nil, isGenerated: false))
        }
        guard !attributes.isEmpty else { throw BatchStoreError(.invalidQuery, "the query returns no columns") }
        let origins = (0..<sqlite3_column_count(stmt)).map { i -> (database: String, table: String, column: String)? in
            guard let d = sqlite3_column_database_name(stmt, i), let t = sqlite3_column_table_name(stmt, i),
                  let c = sqlite3_column_origin_name(stmt, i) else { return nil }
            return (String(cString: d), String(cString: t), String(cString: c))
        }
        let (tables, why) = editTables(text, attributes: attributes, origins: origins, schema: schema) { entity in
            // The column that is the table's rowid, as SQLite answers `SELECT rowid FROM t`'s
            // origin (an `INTEGER PRIMARY KEY DESC` column is not one, though declared alike).
            var probe: OpaquePointer?
            guard sqlite3_prepare_v2(db.sqliteConnection, "SELECT rowid FROM main.\(quoteIdentifier(entity.name))", -1, &probe, nil) == SQLITE_OK,
                  let probe else { return nil }
            defer { sqlite3_finalize(probe) }
            return sqlite3_column_origin_name(probe, 0).map { String(cString: $0) }.flatMap { $0 == "rowid" ? nil : $0 }
        }
        return Entity(name: name, kind: .view, storeName: storeName, attributes: attributes, uniquenessConstraints: [],
                      relationships: [], indexedColumns: [], keyColumns: nil, readOnlyReason: why, query: text, editTables: tables)
    }

    /// The tables whose rows the query's rows name by key (see ``QueryEditTable``), from each
    /// result column's origin (`sqlite3_column_table_name`, `sqlite3_column_origin_name`) and the
    /// query's words; with none, why its result is read-only.
    static func editTables(_ text: String, attributes: [Attribute], origins: [(database: String, table: String, column: String)?],
                           schema: Schema, rowidAlias: (Entity) -> String?) -> (tables: [QueryEditTable], why: String?) {
        let shape = QueryTextShape(text)
        if let combining = shape.combining {
            return ([], "a query with \(combining) is read-only: its rows are not each one row of a table")
        }
        if let reused = shape.reusedCommonTable {
            return ([], "the query reads \(reused) more than once, so its rows do not name one row of a table: its result is read-only")
        }
        if let view = schema.entities.first(where: { $0.kind == .view && $0.query == nil && shape.references[$0.name.lowercased()] != nil }) {
            return ([], "the query reads the view \(view.name), so its result is read-only")
        }
        var tables: [(first: Int, table: QueryEditTable)] = []
        var why = "no table's whole key is among the query's columns, so its result is read-only (to edit a table's rows, select its rowid or INTEGER PRIMARY KEY, or every column of a WITHOUT ROWID table's key)"
        var seen = Set<String>()
        for origin in origins.compactMap({ $0 }) where origin.database == "main" && !seen.contains(origin.table.lowercased()) {
            seen.insert(origin.table.lowercased())
            guard let entity = schema.entity(named: origin.table), entity.query == nil, !entity.isReadOnly else { continue }
            // The names a key column's origin may carry: a rowid table's rowid is named `rowid`,
            // or its INTEGER PRIMARY KEY's name.
            // (SQLite names the rowid's origin `rowid` however it was read: when a column is
            // called `rowid`, that origin is ambiguous and is not taken for the key.)
            let rowid = entity.attribute(named: "rowid") == nil ? ["rowid"] : []
            let keyNames: [[String]] = entity.isKeyedByRowid
                ? [rowid + (rowidAlias(entity).map { [$0] } ?? [])]
                : entity.primaryKey.map { [$0] }
            var keyAttributes: [String] = []
            var columns: [String: String] = [:]
            for (i, o) in origins.enumerated() {
                guard let o, o.database == "main", o.table.caseInsensitiveCompare(entity.name) == .orderedSame else { continue }
                if let column = entity.attribute(named: o.column)?.name { columns[attributes[i].name] = column }
            }
            for names in keyNames {
                guard let i = origins.firstIndex(where: { o in
                    guard let o, o.database == "main", o.table.caseInsensitiveCompare(entity.name) == .orderedSame else { return false }
                    return names.contains { $0.caseInsensitiveCompare(o.column) == .orderedSame }
                }) else { break }
                keyAttributes.append(attributes[i].name)
            }
            guard keyAttributes.count == keyNames.count, !keyNames.isEmpty else { continue }
            guard shape.references[entity.name.lowercased()] == 1 else {
                why = "the query reads \(entity.name) more than once, so its rows do not name one row of it: its result is read-only"
                continue
            }
            let first = attributes.firstIndex { $0.name == keyAttributes[0] } ?? 0
            tables.append((first, QueryEditTable(table: entity.name, keyAttributes: keyAttributes, columns: columns)))
        }
        let found = tables.sorted { $0.first < $1.first }.map(\.table)
        return (found, found.isEmpty ? why : nil)
    }

    /// Adds the result of one read-only SQL query as a new entity of this store (named `query`, or
    /// the next free `query_2`, `query_3`…) and answers it: fetch it, filter it, sort it and edit
    /// through it as ``Options/query``'s (see <doc:QueryResults>).
    ///
    /// `arguments` bind the query's `?` parameters, in order, written into it as SQL literals
    /// (``SQLValue/sqlLiteral``) before it is checked: their number must be the query's, and named
    /// parameters (`:x`, `@x`, `$x`, `?7`) are refused. The checks are ``Options/query``'s, run on
    /// a read-only connection of its own; nothing is written.
    /// - Complexity: one prepare of the query; it is not run.
    @discardableResult
    public func addQuery(_ sql: String, arguments: [SQLValue] = []) throws -> Entity {
        var readOptions = options
        readOptions.readOnly = true
        readOptions.query = nil
        let queue = try Self.openQueue(path: path, options: readOptions)
        let storeName = name
        return try schemaState.withLock { schema in
            let entity = try queue.inDatabase { db -> Entity in
                let text = try Self.binding(arguments, into: sql, db)
                let taken = Set(schema.entities.map { $0.name.lowercased() })
                var name = Self.queryEntityName, n = 1
                while taken.contains(name) { n += 1; name = "\(Self.queryEntityName)_\(n)" }
                return try Self.queryEntity(db, sql: text, name: name, storeName: storeName, schema: schema)
            }
            schema = Schema(entities: schema.entities + [entity], unreadableViews: schema.unreadableViews)
            return entity
        }
    }

    /// `sql` with its `?` parameters replaced, in order, by `arguments` as SQL literals (outside
    /// strings, quoted names and comments), after checking it as a query and counting them.
    static func binding(_ arguments: [SQLValue], into sql: String, _ db: Database) throws -> String {
        let text = try checkedQuery(db, sql)
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db.sqliteConnection, text, -1, &stmt, nil) == SQLITE_OK, let stmt else { throw queryError(db, in: text) }
        defer { sqlite3_finalize(stmt) }
        let count = Int(sqlite3_bind_parameter_count(stmt))
        for i in 0..<count {
            if let named = sqlite3_bind_parameter_name(stmt, Int32(i + 1)) {
                throw BatchStoreError(.invalidQuery, "the query's parameter \(String(cString: named)) is named: only ? parameters take arguments, in order")
            }
        }
        guard count == arguments.count else {
            throw BatchStoreError(.invalidQuery, "the query has \(count) ? \(count == 1 ? "parameter" : "parameters") and \(arguments.count) \(arguments.count == 1 ? "argument was" : "arguments were") given")
        }
        guard count > 0 else { return text }
        let lexed = SQLText(text)
        var out: [UInt8] = []
        var copied = 0, next = 0
        for lexeme in lexed.lexemes where lexeme.kind == .parameter && lexeme.range.count == 1 && next < arguments.count {
            out += lexed.bytes[copied..<lexeme.range.lowerBound]
            // A negative number in parentheses: after a `-`, `-5` would begin a comment.
            let literal = arguments[next].sqlLiteral
            out += Array((literal.hasPrefix("-") ? "(\(literal))" : literal).utf8)
            next += 1
            copied = lexeme.range.upperBound
        }
        out += lexed.bytes[copied...]
        return try checkedQuery(db, String(decoding: out, as: UTF8.self))
    }

    /// The checks on a query's text that need no database: not empty, no NUL byte, a first word
    /// that begins a query (SELECT, WITH, VALUES), no `pragma_optimize`. Run before a database is
    /// opened or made (the browser's demo), and again when the store opens the query.
    public static func checkQueryText(_ sql: String) throws {
        let bytes = Array(sql.utf8)
        guard !bytes.contains(0) else { throw BatchStoreError(.invalidQuery, "the query holds a NUL byte") }
        let first = firstWordStart(bytes)
        guard first < bytes.count else { throw BatchStoreError(.invalidQuery, "the query is empty") }
        var end = first
        while end < bytes.count, (0x61...0x7A).contains(bytes[end] | 0x20) { end += 1 }
        let keyword = String(decoding: bytes[first..<end], as: UTF8.self).uppercased()
        guard ["SELECT", "WITH", "VALUES"].contains(keyword) else {
            throw BatchStoreError(.invalidQuery, "\(keyword.isEmpty ? "this statement" : keyword) is not a query; only a SELECT (or WITH … SELECT, VALUES) runs")
        }
        if sql.lowercased().contains("pragma_optimize") {
            throw BatchStoreError(.invalidQuery, "the query reads pragma_optimize, which may write to the database (it runs ANALYZE); only reads run")
        }
    }

    /// The statement of `sql` as it will be wrapped: one read-only SELECT, without the `;`, spaces
    /// and comments after it (and a line end after it if it holds `--`, so that a comment at its
    /// end cannot reach the `)` that closes it).
    static func checkedQuery(_ db: Database, _ sql: String) throws -> String {
        try checkQueryText(sql)
        let connection = db.sqliteConnection
        var utf8 = Array(sql.utf8)
        utf8.append(0)
        // Prepared from its first word: SQLite refuses a leading `;`, which the shell skips.
        let first = firstWordStart(utf8)
        return try utf8.withUnsafeBufferPointer { buffer -> String in
            guard let base = buffer.baseAddress else { throw BatchStoreError(.invalidQuery, "the query is empty") }
            let start = UnsafeRawPointer(base + first).assumingMemoryBound(to: CChar.self)
            var stmt: OpaquePointer?
            var tail: UnsafePointer<CChar>?
            guard sqlite3_prepare_v2(connection, start, -1, &stmt, &tail) == SQLITE_OK else {
                throw queryError(db, in: sql, from: first)
            }
            guard let stmt else { throw BatchStoreError(.invalidQuery, "the query is empty") }
            defer { sqlite3_finalize(stmt) }
            let consumed = first + (tail.map { $0 - start } ?? (buffer.count - 1 - first))
            if let tail, tail.pointee != 0 {
                var next: OpaquePointer?
                let rc = sqlite3_prepare_v2(connection, tail, -1, &next, nil)
                defer { sqlite3_finalize(next) }
                if rc != SQLITE_OK || next != nil {
                    var second = consumed
                    while second < buffer.count - 1, SQLText.isSpace(buffer[second]) || buffer[second] == 0x3B { second += 1 }
                    throw BatchStoreError(.invalidQuery, "the query holds more than one statement (the second starts at character \(Self.characterOffset(sql, byte: second) + 1)); only one SELECT runs")
                }
            }
            guard sqlite3_stmt_isexplain(stmt) == 0 else {
                throw BatchStoreError(.invalidQuery, "EXPLAIN is not a query; only a SELECT (or WITH … SELECT, VALUES) runs")
            }
            guard sqlite3_stmt_readonly(stmt) != 0 else {
                throw BatchStoreError(.invalidQuery, "the query would write to the database; only a SELECT that reads runs")
            }
            var end = consumed
            while end > first, SQLText.isSpace(buffer[end - 1]) || buffer[end - 1] == 0x3B { end -= 1 }
            let statement = buffer[first..<end]
            // A `--` comment at the end would swallow the `)` after it.
            let dashes = zip(statement, statement.dropFirst()).contains { $0 == 0x2D && $1 == 0x2D }
            return String(decoding: statement, as: UTF8.self) + (dashes ? "\n" : "")
        }
    }

    /// SQLite's message for the statement that just failed, with the character of `text` it
    /// failed at when SQLite names one.
    private static func queryError(_ db: Database, in text: String?, from first: Int = 0) -> BatchStoreError {
        let connection = db.sqliteConnection
        let message = String(cString: sqlite3_errmsg(connection))
        let at = Int(sqlite3_error_offset(connection))
        var position = text.flatMap { at >= 0 ? " at character \(characterOffset($0, byte: first + at) + 1)" : nil } ?? ""
        // SQLite names no position for a statement cut short: it is the end.
        if position.isEmpty, let text, message == "incomplete input" {
            position = " at character \(text.count + 1) (its end)"
        }
        return BatchStoreError(.invalidQuery, "the query\(position): \(message)")
    }

    /// Where the first word of a statement starts: after white space, `;` and comments
    /// (`bytes.count` when there is none; a `/*` left open runs to the end).
    static func firstWordStart(_ bytes: [UInt8]) -> Int {
        let text = SQLText(bytes: bytes)
        let first = text.lexemes.first { $0.kind != .comment && !($0.kind == .symbol && bytes[$0.range.lowerBound] == 0x3B) }
        return first?.range.lowerBound ?? bytes.count
    }

    /// The character index of UTF-8 byte `byte` of `text`.
    private static func characterOffset(_ text: String, byte: Int) -> Int {
        let utf8 = text.utf8
        guard let index = utf8.index(utf8.startIndex, offsetBy: byte, limitedBy: utf8.endIndex) else { return text.count }
        return text.distance(from: text.startIndex, to: index)
    }
}
