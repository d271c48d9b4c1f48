import Foundation
import GRDB
import GRDBSQLite

extension ManagedObjectContext {
    /// Which foreign key of a row (`pairs`, by column index) names no row of its parent table:
    /// `flights.tailnum = "N1" names no row of planes (by tailnum)`, or nil when each names one
    /// (the failure was elsewhere: a row of another table refers to it, a deferred key).
    static func danglingReference(_ db: Database, entity: Entity, schema: Schema, pairs: [(column: Int, value: SQLValue)]) throws -> String? {
        let given = Dictionary(pairs.map { (entity.attributes[$0.column].name.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        for relationship in entity.relationships {
            let values = relationship.sourceColumns.map { given[$0.lowercased()] ?? .null }
            // A key with a NULL column refers to nothing, as SQLite sees it; an omitted column takes its default.
            guard relationship.sourceColumns.allSatisfy({ given[$0.lowercased()] != nil }), !values.contains(.null) else { continue }
            var destination = relationship.destinationColumns
            if destination.isEmpty { destination = schema.entity(named: relationship.destinationEntityName)?.primaryKey ?? [] }
            guard destination.count == values.count else { continue }
            let match = destination.map { "\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
            let found = try Int.fetchOne(db, sql: "SELECT 1 FROM main.\(quoteIdentifier(relationship.destinationEntityName)) WHERE \(match) LIMIT 1",
                                         arguments: values.statementArguments)
            if found == nil {
                let shown = zip(relationship.sourceColumns, values).map { "\(entity.name).\($0) = \(FetchPredicate.literal($1) ?? "\($1)")" }.joined(separator: ", ")
                return "\(shown) names no row of \(relationship.destinationEntityName) (by \(destination.joined(separator: ", ")))"
            }
        }
        return nil
    }

    /// Runs a batch insert in one transaction: every row or none.
    /// - Throws: `.noSuchAttribute` for an unknown key (naming it and the row), `.constraint` naming
    ///   SQLite's rule and the row number; then nothing was written.
    /// - Complexity: one statement execution per row (an upsert adds one key probe per row, see
    ///   `UpsertWriter`); memory O(1) unless `.objectIDs` is asked for.
    ///
    /// With `undoable`, the inserted keys are journaled in a temp table, and ``undo()`` deletes them;
    /// an upsert also journals the before-image of every row it updates, which undo restores.
    public func execute(_ request: BatchInsertRequest, undoable: Bool = false) throws -> BatchResult {
        let entity = try store.entity(named: request.entityName)
        try checkWritable(entity)
        let isUpsert: Bool
        if case .upsert = request.conflictPolicy { isUpsert = true } else { isUpsert = false }
        let wantKeys = request.resultType == .objectIDs || request.resultType == .changes || undoable
        let storedTable = request.resultType == .changes ? makeTempTableName("bs_changes") : nil
        // An upsert's updated rows are kept apart from its inserted ones, so a merge refaults them.
        let storedUpdatedTable = request.resultType == .changes && isUpsert ? makeTempTableName("bs_changes") : nil
        let queue = connection.queue
        let table = "main.\(quoteIdentifier(entity.name))"
        let returning = wantKeys ? entity.returningKeysSQL : ""
        var sqlByColumns: [[Int]: String] = [:]
        func sql(for columns: [Int]) -> String {
            if let s = sqlByColumns[columns] { return s }
            let names = columns.map { quoteIdentifier(entity.attributes[$0].name) }
            var s = columns.isEmpty
                ? "INSERT OR ABORT INTO \(table) DEFAULT VALUES"
                : "INSERT OR ABORT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
            if case .ignore = request.conflictPolicy, !columns.isEmpty { s += " ON CONFLICT DO NOTHING" }
            s += returning
            sqlByColumns[columns] = s
            return s
        }
        return try withDatabase { db in
            // The pragma cannot change inside a transaction: off before it, on again after.
            if !request.checksForeignKeys { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
            defer { if !request.checksForeignKeys { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
            var count = 0
            var ids: [ObjectID] = []
            var updatedIDs: [ObjectID] = []
            var rowNumber = 0
            let keyCount = entity.keyColumns.count
            var journal: String?
            var journalInsert: Statement?
            var storedInsert: Statement?
            var storedUpdatedInsert: Statement?
            var storedCount = 0
            var storedUpdatedCount = 0
            try inBatchWriteTransaction(db, largerCache: true) {
                let cols = (0..<keyCount).map { _ in "?" }.joined(separator: ", ")
                if let storedTable {
                    try connection.createTempTable(db, named: storedTable, StoredChanges.keyTableDefinition(entity))
                    storedInsert = try db.makeStatement(sql: "INSERT OR IGNORE INTO temp.\(quoteIdentifier(storedTable)) VALUES (\(cols))")
                }
                if let storedUpdatedTable {
                    try connection.createTempTable(db, named: storedUpdatedTable, StoredChanges.keyTableDefinition(entity))
                    storedUpdatedInsert = try db.makeStatement(sql: "INSERT OR IGNORE INTO temp.\(quoteIdentifier(storedUpdatedTable)) VALUES (\(cols))")
                }
                if undoable {
                    let name = makeTempTableName("bs_undo")
                    if isUpsert {
                        try connection.createTempTable(db, named: name, UpsertWriter.journalDefinition(entity))
                    } else {
                        let keyNames = (0..<keyCount).map { "k\($0)" }
                        try connection.createTempTable(db, named: name, "(\(keyNames.joined(separator: ", ")))")
                        journalInsert = try db.makeStatement(sql: "INSERT INTO temp.\(quoteIdentifier(name)) VALUES (\(cols))")
                    }
                    journal = name
                }
                var upsert = isUpsert ? UpsertWriter(entity: entity, db: db, wantKeys: wantKeys, journal: journal) : nil
                // Per column set: its statement, prepared once for this request.
                var statements: [[Int]: Statement] = [:]
                // Key names seen so far -> column index (exact spelling; the entity resolves others).
                var indexByName: [String: Int] = [:]
                let connection = db.sqliteConnection
                // The plain insert's last statement and the keys of the row that prepared it, in
                // column order. A row with as many keys, each of them among these, names the same
                // columns (checked for that row), so it binds by them: no pairing, sorting or
                // statement lookup per row.
                var lastKeys: [String] = []
                var lastColumns: [Int] = []
                var lastStatement: OpaquePointer?
                // SQLite's refusal of row `rowNumber`, said as the user reads it: a dangling
                // foreign key names its column and value.
                func refusal(_ error: DatabaseError, _ pairs: [(column: Int, value: SQLValue)]) -> BatchStoreError {
                    if error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY,
                       let problem = try? Self.danglingReference(db, entity: entity, schema: store.schema, pairs: pairs) {
                        return BatchStoreError(.constraint, "row \(rowNumber): \(problem); nothing was written (--foreign-keys off imports such rows as they are)")
                    }
                    // A value an INTEGER PRIMARY KEY cannot hold: name it, as SQLite does not.
                    if error.resultCode == .SQLITE_MISMATCH,
                       let (column, value) = pairs.first(where: { pair in
                           let attribute = entity.attributes[pair.column]
                           guard attribute.primaryKeyPosition != nil, attribute.declaredType.uppercased() == "INTEGER" else { return false }
                           if case .integer = pair.value { return false }
                           return pair.value != .null
                       }) {
                        let shown: String
                        if case .text(let text) = value { shown = text.debugDescription } else { shown = "\(value)" }
                        return BatchStoreError(.constraint, "row \(rowNumber): \(entity.name).\(entity.attributes[column].name) = \(shown) is not an integer, and an INTEGER PRIMARY KEY holds only integers; nothing was written")
                    }
                    return BatchStoreError.wrap(error, context: "row \(rowNumber)")
                }
                // The column a row's key names, checked: it exists and can be set.
                func columnIndex(_ key: String) throws -> Int {
                    if let known = indexByName[key] { return known }
                    guard let found = entity.indexOfAttribute(named: key) else {
                        throw BatchStoreError(.noSuchAttribute, "row \(rowNumber): \(entity.name) has no column named \(key.debugDescription); columns: \(entity.attributes.map(\.name).joined(separator: ", "))")
                    }
                    if entity.attributes[found].isGenerated {
                        throw BatchStoreError(.readOnly, "row \(rowNumber): \(entity.name).\(entity.attributes[found].name) is a generated column and cannot be set")
                    }
                    indexByName[key] = found
                    return found
                }
                // Rows by position into a plain insert: the columns resolved at the first row,
                // one statement in their order, each row bound as it comes.
                if let positional = request.positional, !isUpsert, !wantKeys {
                    var columns: [Int]?
                    var statement: Statement?
                    while let values = try positional.next() {
                        rowNumber += 1
                        if columns == nil {
                            let resolved = try positional.columns.map(columnIndex)
                            if Set(resolved).count < resolved.count {
                                throw BatchStoreError(.invalidArgument, "row \(rowNumber): two keys name the same column (names are case-insensitive)")
                            }
                            statement = try db.makeStatement(sql: sql(for: resolved))
                            columns = resolved
                        }
                        let stmt = statement?.sqliteStatement
                        sqlite3_reset(stmt)
                        for (n, value) in values.enumerated() { value.bind(to: stmt, at: Int32(n + 1)) }
                        let code = sqlite3_step(stmt)
                        guard code == SQLITE_DONE else {
                            let message = String(cString: sqlite3_errmsg(connection))
                            sqlite3_reset(stmt)
                            throw refusal(DatabaseError(resultCode: ResultCode(rawValue: code), message: message),
                                          zip(columns ?? [], values).map { (column: $0, value: $1) })
                        }
                        count += Int(sqlite3_changes(connection))
                    }
                    return .commit
                }
                rows: while let row = try request.next() {
                    rowNumber += 1
                    if let stmt = lastStatement, row.count == lastKeys.count {
                        sqlite3_reset(stmt)
                        var bound = true
                        for (n, key) in lastKeys.enumerated() {
                            guard let value = row[key] else { bound = false; break }
                            value.bind(to: stmt, at: Int32(n + 1))
                        }
                        if bound {
                            let code = sqlite3_step(stmt)
                            if code == SQLITE_DONE {
                                count += Int(sqlite3_changes(connection))
                                continue rows
                            }
                            let message = String(cString: sqlite3_errmsg(connection))
                            sqlite3_reset(stmt)
                            throw refusal(DatabaseError(resultCode: ResultCode(rawValue: code), message: message),
                                          zip(lastColumns, lastKeys).compactMap { column, key in row[key].map { (column: column, value: $0) } })
                        }
                    }
                    var pairs: [(column: Int, value: SQLValue)] = []
                    pairs.reserveCapacity(row.count)
                    for (key, value) in row {
                        pairs.append((try columnIndex(key), value))
                    }
                    pairs.sort { $0.column < $1.column }
                    let columns = pairs.map(\.column)
                    if zip(columns, columns.dropFirst()).contains(where: { $0 == $1 }) {
                        throw BatchStoreError(.invalidArgument, "row \(rowNumber): two keys name the same column (names are case-insensitive)")
                    }
                    do {
                        if var writer = upsert {
                            let outcome = try writer.write(pairs)
                            upsert = writer
                            count += 1
                            if undoable && writer.journaled > undoLimit {
                                throw BatchStoreError(.tooBigToUndo, "this upsert passes the undo limit of \(grouped(undoLimit)) rows; run it without undo, or raise undoLimit")
                            }
                            switch outcome {
                            case .inserted(let key?):
                                if request.resultType == .objectIDs { ids.append(ObjectID(entity: entity, keyValues: key)) }
                                if let storedInsert {
                                    try storedInsert.execute(arguments: key.statementArguments)
                                    storedCount += db.changesCount
                                }
                            case .updated(let key?):
                                if request.resultType == .objectIDs {
                                    let id = ObjectID(entity: entity, keyValues: key)
                                    ids.append(id)
                                    updatedIDs.append(id)
                                }
                                if let storedUpdatedInsert {
                                    try storedUpdatedInsert.execute(arguments: key.statementArguments)
                                    storedUpdatedCount += db.changesCount
                                }
                            case .inserted(nil), .updated(nil): break
                            }
                            continue
                        }
                        let statement: Statement
                        if let known = statements[columns] {
                            statement = known
                        } else {
                            statement = try db.makeStatement(sql: sql(for: columns))
                            statements[columns] = statement
                        }
                        if wantKeys {
                            let cursor = try Row.fetchCursor(statement, arguments: pairs.map(\.value).statementArguments)
                            while let key = try cursor.next() {
                                let id = ObjectID(entity: entity, keyRow: key)
                                if request.resultType == .objectIDs { ids.append(id) }
                                if let storedInsert {
                                    try storedInsert.execute(arguments: id.keyValues.statementArguments)
                                    storedCount += db.changesCount
                                }
                                if let journalInsert {
                                    try journalInsert.execute(arguments: id.keyValues.statementArguments)
                                    if count >= undoLimit {
                                        throw BatchStoreError(.tooBigToUndo, "this insert passes the undo limit of \(grouped(undoLimit)) rows; run it without undo, or raise undoLimit")
                                    }
                                }
                                count += 1
                            }
                        } else {
                            // The hot path binds and steps through the C API: no argument arrays.
                            let stmt = statement.sqliteStatement
                            sqlite3_reset(stmt)
                            for (n, pair) in pairs.enumerated() { pair.value.bind(to: stmt, at: Int32(n + 1)) }
                            let code = sqlite3_step(stmt)
                            guard code == SQLITE_DONE else {
                                let message = String(cString: sqlite3_errmsg(connection))
                                sqlite3_reset(stmt)
                                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
                            }
                            count += Int(sqlite3_changes(connection))
                            // This row's keys, in column order, for the rows after it.
                            let keys = columns.compactMap { column in row.keys.first { indexByName[$0] == column } }
                            if keys.count == columns.count {
                                (lastKeys, lastColumns, lastStatement) = (keys, columns, stmt)
                            }
                        }
                    } catch let error as DatabaseError {
                        throw refusal(error, pairs)
                    }
                }
                return .commit
            }
            if let journal {
                let kind: JournaledEdit = isUpsert ? .upsert(columns: UpsertWriter.journalColumns(entity)) : .insert
                undoStack.append(UndoEntry(entity: entity, kind: kind, table: journal))
            }
            var changes: ChangeSet?
            if let storedTable {
                var stored = [StoredChanges(entity: entity, kind: .inserted, count: storedCount, queue: queue, table: storedTable)]
                if let storedUpdatedTable {
                    stored.append(StoredChanges(entity: entity, kind: .updated, count: storedUpdatedCount, queue: queue, table: storedUpdatedTable))
                }
                changes = ChangeSet(stored: stored)
            } else if request.resultType == .objectIDs {
                let updated = Set(updatedIDs)
                changes = ChangeSet(inserted: ids.filter { !updated.contains($0) }, updated: updatedIDs)
            }
            return BatchResult(request.resultType, count: count, ids: ids, changes: changes ?? ChangeSet())
        }
    }
}

extension BatchInsertRequest {
    /// Rows from records, encoded through GRDB's `EncodableRecord` (Codable) support.
    public init<Record: EncodableRecord>(entityName: String, records: [Record], conflictPolicy: ConflictPolicy = .fail, resultType: BatchResultType = .statusOnly) {
        var iterator = records.makeIterator()
        self.init(entityName: entityName, conflictPolicy: conflictPolicy, resultType: resultType) {
            guard let record = iterator.next() else { return nil }
            return try record.databaseDictionary.mapValues { SQLValue($0) }
        }
    }
}
