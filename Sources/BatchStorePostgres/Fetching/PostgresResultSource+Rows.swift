import BatchStore
import Foundation

extension PostgresResultSource {
    /// The fault query's rows as objects in the slots of `positions` (nil where none came): each
    /// row the position, the key's values (unless `keysInline`: then read from the row's own
    /// columns, ``keyIndexes``) and the columns.
    func objects(from rows: [[SQLValue]], positions: Range<Int>, keysInline: Bool = false) -> [ManagedObject?] {
        var objects = [ManagedObject?](repeating: nil, count: positions.count)
        // Only rows named by a primary key join the identity map: a `ctid` names a place, which
        // another row may take after a delete and a vacuum (the registered object would then
        // stand for the wrong row).
        let context = table.hasPrimaryKey ? self.context : nil
        let keyCount = isAddressable && !keysInline ? idTable.columns.count : 0
        let inline = keysInline ? keyIndexes ?? [] : []
        for row in rows {
            guard let pos = row.first?.integerValue else { continue }
            let slot = Int(pos) - 1 - positions.lowerBound
            guard slot >= 0 && slot < objects.count else { continue }
            let key: ObjectKey
            if !isAddressable {
                key = .position(Int(pos) - 1)
            } else if keysInline {
                key = .primaryKey(inline.map { row[1 + $0] })
            } else {
                key = .primaryKey(Array(row[1..<(1 + keyCount)]))
            }
            objects[slot] = object(ObjectID(entity: entity, key: key), values: Array(row[(1 + keyCount)...]), in: context)
        }
        return objects
    }

    /// The object for the row `id` names, holding `values`: the context's (a fault takes these
    /// values; one that holds values keeps them until refreshed or merged; nil when merged as
    /// deleted), or without a context, a new one.
    @inline(__always)
    func object(_ id: ObjectID, values: [SQLValue], in context: PostgresContext?) -> ManagedObject? {
        guard let context else { return ManagedObject(objectID: id, link: link, values: values) }
        return context.identity.adopt(id, link: context.link) { .decoded(values) }
    }

    func objectID(idRow: [SQLValue], position: Int) -> ObjectID? {
        guard isAddressable else { return ObjectID(entity: entity, key: .position(position)) }
        return ObjectID(entity: entity, key: .primaryKey(idRow))
    }

    func idRow(of id: ObjectID) -> [SQLValue]? {
        guard isAddressable, id.entity === entity, id.isAddressable else { return nil }
        return id.keyValues
    }

    func storeName(idRow: [SQLValue]) -> String? { store.name }

    /// The search for the next row after (or before) `position` that `predicate` matches, in
    /// result order over the ID table, stopping at the first match: first the positions near
    /// `position` (about 20,000, a key lookup per ID row: a near match costs little), then one
    /// query over the rest that reads the table's matches once, hashed, and walks the ID table in
    /// order to the first one in it (``PostgresIDTable/farSearchMarker``; when nothing matches,
    /// the empty hash ends it without walking the ID table): a far match, or none, costs about one
    /// scan of the table, not a key lookup per position between (20 s for a missing value over
    /// 10M rows, where the scan takes 4.6 s). Near windows over a numbered table are one `pos`
    /// range; over a packed one, TID ranges growing fourfold from 4,096 rows.
    func searchQueries(_ predicate: FetchPredicate, after position: Int, backwards: Bool) throws -> [IDQuery] {
        guard isAddressable else { throw BatchStoreError(.invalidQuery, "\(table.name) has no row key, so it cannot be searched in place") }
        let builder = PostgresQueryBuilder(table: table, schema: store.schema, asciiCharacterClasses: store.hasASCIICharacterClasses)
        let condition = try builder.compile(predicate.node)
        let on = idTable.columns.map { "\($0.source) = ids.\($0.name)" }.joined(separator: " AND ")
        let from = (["\(idTable.qualifiedName) AS ids JOIN \(table.qualifiedSQL) AS t ON \(on)"] + builder.joins).joined(separator: " ")
        let select = "SELECT \(idTable.positionSQL("ids")) FROM \(from) WHERE "
        let tail = " AND (\(condition)) ORDER BY \(idTable.orderSQL("ids", backwards: backwards)) LIMIT 1"
        let bound = builder.arguments
        // Positions as ranges of 0-based positions still to search, in the search's direction.
        var near: [Range<Int>] = []
        var width = 4_096, covered = 0
        let reach = Self.nearSearchPositions
        if backwards {
            var end = min(position, idTable.count)
            while end > 0, covered < reach {
                near.append(max(0, end - width)..<end)
                covered += min(width, end)
                end = max(0, end - width)
                width *= 4
            }
        } else {
            var start = max(0, position + 1)
            while start < idTable.count, covered < reach {
                near.append(start..<min(idTable.count, start + width))
                covered += width
                start += width
                width *= 4
            }
        }
        if case .numbered = idTable.layout, let first = near.first, let last = near.last {
            // One pos range: the index walks it in order and stops at the first match.
            near = [min(first.lowerBound, last.lowerBound)..<max(first.upperBound, last.upperBound)]
        }
        var queries: [IDQuery] = []
        for window in near {
            let (range, arguments) = idTable.rangeSQL("ids", window.lowerBound, window.upperBound, from: bound.count + 1)
            let sql = select + range + tail
            try prepare(sql)
            queries.append(IDQuery(select: sql, arguments: bound + arguments))
        }
        // The rest, if any: the matches hashed once, the ID table walked in order.
        // (Bounds checked before the range is made: an empty result, or a search from its end.)
        let restLower = backwards ? 0 : (near.map(\.upperBound).max() ?? max(0, position + 1))
        let restUpper = backwards ? (near.map(\.lowerBound).min() ?? max(0, min(position, idTable.count))) : idTable.count
        if restLower < restUpper {
            let rest = restLower..<restUpper
            let keys = idTable.columns
            let matches = "SELECT \(keys.map(\.source).joined(separator: ", ")) FROM \(([table.qualifiedSQL + " AS t"] + builder.joins).joined(separator: " ")) WHERE \(condition)"
            let (range, arguments) = idTable.rangeSQL("ids", rest.lowerBound, rest.upperBound, from: bound.count + 1)
            let sql = "\(PostgresIDTable.farSearchMarker) SELECT \(idTable.positionSQL("ids")) FROM \(idTable.qualifiedName) AS ids WHERE \(range) AND (\(keys.map { "ids.\($0.name)" }.joined(separator: ", "))) IN (\(matches)) ORDER BY \(idTable.orderSQL("ids", backwards: backwards)) LIMIT 1"
            try prepare(sql)
            queries.append(IDQuery(select: sql, arguments: bound + arguments))
        }
        return queries
    }

    /// Positions a search looks at one by one before it reads the table's matches instead.
    static let nearSearchPositions = 20_000

    /// A new name for a frequency table in this session (`bs_freq_1`, `bs_freq_2`, …).
    func makeFrequencyTableName() -> String {
        frequencyTables += 1
        return "bs_freq_\(frequencyTables)"
    }
}

extension PostgresTable {
    /// The table as an ``Entity``: its columns as attributes (types as PostgreSQL writes them),
    /// keyed by its primary key, by `ctid` (read-only), or not at all (a view).
    func makeEntity() -> Entity {
        let attributes = columns.map {
            Attribute(engineColumn: $0.name, declaredType: $0.declaredType, isNotNull: $0.isNotNull, defaultValueSQL: $0.defaultValueSQL,
                      primaryKeyPosition: $0.primaryKeyPosition, isGenerated: $0.isGenerated)
        }
        let keys: [String]
        switch rowKey {
        case .primaryKey(let names): keys = names
        case .ctid: keys = ["tableoid", "ctid"]
        case .none: keys = []
        }
        return Entity(name: name, kind: keys.isEmpty ? .view : .withoutRowidTable, storeName: storeName, attributes: attributes,
                      uniquenessConstraints: uniquenessConstraints, relationships: relationships, indexedColumns: indexedColumns,
                      keyColumns: keys, readOnlyReason: readOnlyReason)
    }
}

extension BatchFaultingCollection {
    /// ``PostgresResultSource/faultPlans()`` of a PostgreSQL result; nil for any other.
    package func postgresFaultPlans() throws -> (generic: Int, custom: Int)? {
        try (storage.source as? PostgresResultSource)?.faultPlans()
    }

    /// True while a PostgreSQL result's faults read their rows as one `record[]` cell; nil for any
    /// other result. For the tests.
    package var postgresFaultsAsRecords: Bool? { (storage.source as? PostgresResultSource)?.faultsAsRecords }
}


/// The owner of objects no context holds (see `PostgresResultSource.link`): they keep the values
/// their batch read, and say why they cannot do more.
final class UncontainedRows: ObjectOwner {
    let table: PostgresTable
    init(table: PostgresTable) { self.table = table }

    var why: String {
        table.readOnlyReason.map { "cannot change rows of \(table.name): \($0)" }
            ?? "it was read without a context (PostgresStore.fetchBatched); open the result through a PostgresContext to change its rows"
    }

    func fulfillFault(_ object: ManagedObject) throws {
        throw BatchStoreError(.objectNotFound, "\(object.objectID): no context holds it, so its row cannot be read again")
    }

    func objectDidDeallocate(_ object: ManagedObject) {}

    func takeUnsavedChange(_ value: SQLValue, at index: Int, of object: ManagedObject) throws {
        throw BatchStoreError(table.readOnlyReason == nil ? .invalidArgument : .readOnly, "\(object.objectID.entity.name): \(why)")
    }

    func isPendingDelete(_ object: ManagedObject) -> Bool { false }
}
