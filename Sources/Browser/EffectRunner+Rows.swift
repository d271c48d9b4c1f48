import BatchStore
import Foundation

extension EffectRunner {
    /// The row as the grid shows it: values cut to display length, the store first with several.
    func snapshot(_ object: ManagedObject?) -> RowSnapshot {
        guard let object, !object.isDeleted else { return RowSnapshot(id: nil, values: [], exists: false) }
        // A query's rows that name tables' rows are marked by position: this result's alone.
        let id = object.objectID
        return RowSnapshot(id: id.isAddressable || !id.entity.editTables.isEmpty ? id : nil, values: RowSnapshot.values(of: object, showingStore: data.showsStores), exists: true)
    }

    /// The object at `row` of `collection`, or nil (a row gone) for a row past its end: the screen
    /// may ask for rows before it hears of a smaller result (one read again after an edit).
    func object(at row: Int, of collection: BrowserResult) throws -> ManagedObject? {
        guard row >= 0, row < collection.count else { return nil }
        return try collection.object(at: row)
    }

    /// The rows of `range`, faulted in batches (or read from the eager array); rows past the
    /// result's end show as gone.
    /// - Complexity: O(`range.count`) plus one fault per batch not resident.
    func snapshots(_ range: Range<Int>) throws -> [RowSnapshot] {
        guard let collection else { return Array(repeating: RowSnapshot(id: nil, values: [], exists: false), count: range.count) }
        let eager = eagerArray.count
        return try timingFaults(of: collection) {
            try range.map { row in
                if row < eager { return snapshot(eagerArray[row]) }
                return snapshot(try object(at: row, of: collection))
            }
        }
    }

    /// Runs `body`, and when it faulted batches of `collection` in, keeps the time per batch on
    /// the injected clock for the memory panel's "last fault".
    func timingFaults<R>(of collection: BrowserResult, _ body: () throws -> R) rethrows -> R {
        let faulted = collection.statistics.batchesFaulted
        let started = environment.now()
        let result = try body()
        let faults = collection.statistics.batchesFaulted - faulted
        if faults > 0 { lastFaultSeconds = (environment.now() - started) / Double(faults) }
        return result
    }

    /// The record at `row`: its object ID, then every column with its whole value (one row's
    /// values, as the context holds them; nothing else is read).
    func record(_ row: Int, state: BrowserState) throws -> TextSheet {
        guard let collection, let object = try timingFaults(of: collection, { try self.object(at: row, of: collection) }) else {
            throw BatchStoreError(.objectNotFound, "row \(row + 1) was deleted since the result was fetched; r reloads")
        }
        var fields = [TextField(name: "object ID", value: .text(object.objectID.uriRepresentation))]
        if data.showsStores { fields.append(TextField(name: Browser.storeColumn, value: .text(object.objectID.entity.storeName))) }
        for (i, attribute) in object.entity.attributes.enumerated() {
            fields.append(TextField(name: attribute.name + (attribute.declaredType.isEmpty ? "" : " " + attribute.declaredType), value: try object.value(at: i)))
        }
        return TextSheet(purpose: .record(row: row), title: "Row \(group(row + 1)) of \(group(collection.count)) in \(object.entity.name)", fields: fields)
    }

    /// `Q`: the SQL result `result` runs, from BatchStore: the ID fetch and the fault of the batch
    /// holding `row`, each followed by its bound values written as SQL literals (`'Drama'`, `1990`).
    /// On a frequency sheet: the GROUP BY that counted it and the read of the page on screen.
    func statements(of result: Int, row: Int, state: BrowserState) throws -> Action {
        let sql: ResultStatements
        let labels: (String, String)
        let title: String
        if let sheet = state.frequencySheet {
            guard let frequencies else { return .failed("the frequency sheet is gone: Q again") }
            sql = frequencies.statements(readingAt: state.topRow, pageSize: state.gridHeight)
            labels = ("GROUP BY", "page read")
            title = "The SQL of \(sheet.column) freq: \(group(frequencies.count)) \(frequencies.count == 1 ? "value" : "values") in \(rows(frequencies.total))"
        } else {
            guard let collection, collectionID == result else { return .failed("the result changed before Q could read its SQL: Q again") }
            sql = try collection.statements(faultingBatchAt: row)
            labels = ("ID fetch", "batch fault")
            title = "The SQL of \(collection.request.entityName): \(rows(collection.count)), \(collection.batchSize) a batch"
        }
        var fields: [TextField] = []
        if state.frequencySheet == nil, let collection, let query = collection.entity.query {
            // A query's sheet: the query as typed, its result as a statement to paste into the
            // sqlite3 shell (the ID fetch without its INSERT), and what its edits act on.
            fields.append(TextField(name: "query", value: .text(query)))
            if let select = sql.idFetch.range(of: ") SELECT ").map({ String(sql.idFetch[sql.idFetch.index(after: $0.lowerBound)...].dropFirst()) }) {
                fields.append(TextField(name: "result", value: .text(select)))
            }
            let edits = collection.entity.editTables
            fields.append(TextField(name: "edits", value: .text(edits.isEmpty
                ? "none: " + (collection.entity.engineReadOnlyReason ?? "read-only")
                : edits.map { "\($0.table) (rows named by \($0.keyAttributes.joined(separator: ", ")))" }.joined(separator: "; ")
                    + (edits.count > 1 ? "; D, U and e act on \(state.table.map { state.editedTable(of: $0) } ?? edits[0].table), T picks the next" : ""))))
        }
        fields.append(TextField(name: labels.0, value: .text(sql.idFetch)))
        fields += sql.idFetchArguments.enumerated().map { TextField(name: "  ?\($0 + 1)", value: .text(Self.sqlLiteral($1))) }
        fields.append(TextField(name: labels.1, value: .text(sql.batchFault)))
        fields += sql.batchFaultArguments.enumerated().map { TextField(name: "  ?\($0 + 1)", value: .text(Self.sqlLiteral($1))) }
        return .textLoaded(TextSheet(purpose: .sql, title: title, fields: fields))
    }

    /// `value` as SQL writes it: `NULL`, `42`, `4.5`, `'it''s'`, `X'00FF'` (``SQLValue/sqlLiteral``).
    static func sqlLiteral(_ value: SQLValue) -> String { value.sqlLiteral }
}

extension RowSnapshot {
    /// A row's values as the grid shows them: its file first when several are open, then each column.
    static func values(of object: ManagedObject, showingStore: Bool) -> [DisplayValue] {
        let n = object.entity.attributes.count
        var values: [DisplayValue] = []
        values.reserveCapacity(n + 1)
        if showingStore { values.append(.text(object.objectID.entity.storeName)) }
        for i in 0..<n { values.append(DisplayValue((try? object.value(at: i)) ?? .null)) }
        return values
    }
}
