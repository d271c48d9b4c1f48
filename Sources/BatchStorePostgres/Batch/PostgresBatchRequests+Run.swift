import BatchStore
import Foundation

extension PostgresContext {
    func run(_ edits: [CompiledEdit], resultType: BatchResultType, kind: StoredChanges.Kind, undoable: Bool, at site: EditSite) throws -> BatchResult {
        guard let first = edits.first else { return BatchResult(resultType, count: 0) }
        let journal = undoable ? try UndoPlan(first, deleting: kind == .deleted, context: self) : nil
        try prepare(site, for: edits)
        let session = site.session
        let keys = PostgresIDColumn.of(first.table)
        var changesTable: String?
        var ids: [ObjectID] = []
        let count: Int = try inTransaction(session) {
            var count = 0
            if let journal {
                try journal.check(in: session)
                try session.execute(journal.createSQL)
            }
            if resultType == .changes {
                let name = makeTableName("bs_changes")
                let list = keys.map { "\($0.source) AS \($0.name)" }.joined(separator: ", ")
                try session.execute("CREATE TEMP TABLE \(quoteIdentifier(name)) AS SELECT \(list) FROM \(first.table.qualifiedSQL) AS t WITH NO DATA")
                changesTable = name
            }
            for edit in edits {
                if let journal {
                    count += try watched(session, journal.fillSQL(edit), edit.arguments, phase: .writing) ?? 0
                } else if resultType == .objectIDs {
                    for row in try watchedQuery(session, edit.sql + Self.returningKeys(edit.table), edit.arguments, phase: .writing) {
                        ids.append(ObjectID(entity: first.entity, key: .primaryKey(row)))
                    }
                    count = ids.count
                } else if let changesTable {
                    count += try watched(session, "WITH changed AS (\(edit.sql) RETURNING \(keys.sourceList)) INSERT INTO pg_temp.\(quoteIdentifier(changesTable)) SELECT * FROM changed",
                                         edit.arguments, phase: .writing) ?? 0
                } else {
                    count += try watched(session, edit.sql, edit.arguments, phase: .writing) ?? 0
                }
            }
            if let journal {
                if count > undoLimit {
                    throw UndoRefusal.tooBig(rows: count, limit: undoLimit)
                }
                // The changed rows' keys as they are now: the journal's new keys when the update
                // assigned a key column, else its old ones.
                let now = journal.currentKeys
                if resultType == .objectIDs {
                    let read = now.map { $0.read("j") }.joined(separator: ", ")
                    for row in try session.query("SELECT \(read) FROM \(journal.qualifiedName) AS j") {
                        ids.append(ObjectID(entity: first.entity, key: .primaryKey(row)))
                    }
                } else if let changesTable {
                    try session.execute("INSERT INTO pg_temp.\(quoteIdentifier(changesTable)) SELECT \(now.map { "j.\($0.name)" }.joined(separator: ", ")) FROM \(journal.qualifiedName) AS j")
                }
            }
            try flushStatistics(session)
            return count
        }
        if let journal { record(PostgresUndoEntry(lease: site.lease, plan: journal)) }
        if let changesTable {
            let stored = StoredChanges(entity: first.entity, kind: kind, count: count, keys: PostgresChangedKeys(lease: site.lease, table: changesTable, columns: keys))
            return BatchResult(resultType, count: count, changes: ChangeSet(stored: [stored]))
        }
        return BatchResult(resultType, count: resultType == .objectIDs ? ids.count : count, ids: ids, changes: ChangeSet(kind, ids))
    }

    func runCapturing(_ edits: [CompiledEdit], _ body: (ObjectID) throws -> Void) throws -> Int {
        guard let first = edits.first else { return 0 }
        let site = try ownSite()
        try prepare(site, for: edits)
        let session = site.session
        let keys = PostgresIDColumn.of(first.table)
        let reads = keys.enumerated().map { i, k in "\(k.readSource) AS k\(i)" }.joined(separator: ", ")
        let name = makeTableName("bs_changed")
        let table = "pg_temp.\(name)"
        defer { _ = try? session.execute("DROP TABLE IF EXISTS \(table)") }
        let count = try inTransaction(session) {
            try session.execute("CREATE TEMP TABLE \(name) AS SELECT \(reads) FROM \(first.table.qualifiedSQL) AS t WITH NO DATA")
            var count = 0
            for edit in edits {
                count += try watched(session, "WITH changed AS (\(edit.sql) RETURNING \(reads)) INSERT INTO \(table) SELECT * FROM changed", edit.arguments, phase: .writing) ?? 0
            }
            try flushStatistics(session)
            return count
        }
        // Committed: only now does an ID reach the caller.
        let order = (0..<keys.count).map { "k\($0)" }.joined(separator: ", ")
        let entity = first.entity
        try withoutActuallyEscaping(body) { body in
            let box = RowCallback { row in try body(ObjectID(entity: entity, key: .primaryKey(row))) }
            defer { box.body = nil }
            do {
                _ = try session.streamRows("SELECT \(order) FROM \(table) ORDER BY \(order)") { values in
                    do { try box.body?(values) } catch { box.error = error; throw error }
                }
            } catch {
                let failure = box.error ?? error
                // The edit stands: say so, so that nobody runs it again.
                let reason = (failure as? BatchStoreError)?.message ?? "\(failure)"
                throw BatchStoreError((failure as? BatchStoreError)?.code ?? .serverUnavailable,
                                      "the edit committed (\(count) \(count == 1 ? "row" : "rows")), but listing their IDs failed: \(reason)")
            }
        }
        return count
    }
}
