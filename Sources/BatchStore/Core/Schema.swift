import Foundation

/// How a foreign key's rows follow a deleted parent row (Core Data's delete rules, SQLite's actions).
public enum DeleteRule: String, Sendable {
    /// `ON DELETE NO ACTION`: the delete fails at commit if a child still refers to the parent.
    case noAction
    /// `ON DELETE RESTRICT`: the delete fails at once if a child refers to the parent (Core Data's deny).
    case deny
    /// `ON DELETE SET NULL` (Core Data's nullify).
    case nullify
    /// `ON DELETE SET DEFAULT`.
    case setDefault
    /// `ON DELETE CASCADE`: children are deleted with the parent.
    case cascade

    init(sqliteAction: String) {
        switch sqliteAction.uppercased() {
        case "CASCADE": self = .cascade
        case "SET NULL": self = .nullify
        case "SET DEFAULT": self = .setDefault
        case "RESTRICT": self = .deny
        default: self = .noAction
        }
    }
}

/// A column of a table or view.
public struct Attribute: Sendable, Hashable {
    /// The column name, exactly as declared.
    public let name: String
    /// The declared type (`INTEGER`, `TEXT`, `VARCHAR(20)`, or empty), as written in the schema.
    public let declaredType: String
    /// True when the column is declared NOT NULL.
    public let isNotNull: Bool
    /// The DEFAULT clause's SQL text, if any.
    public let defaultValueSQL: String?
    /// Position (1-based) in the primary key, or nil when the column is not part of it.
    public let primaryKeyPosition: Int?
    /// True for generated columns (`GENERATED ALWAYS AS …`), which cannot be written.
    public let isGenerated: Bool

    init(name: String, declaredType: String, isNotNull: Bool, defaultValueSQL: String?, primaryKeyPosition: Int?, isGenerated: Bool) {
        self.name = name
        self.declaredType = declaredType
        self.isNotNull = isNotNull
        self.defaultValueSQL = defaultValueSQL
        self.primaryKeyPosition = primaryKeyPosition
        self.isGenerated = isGenerated
    }

    /// A column of another engine's table, its type as that engine writes it.
    package init(engineColumn name: String, declaredType: String, isNotNull: Bool, defaultValueSQL: String?,
                 primaryKeyPosition: Int?, isGenerated: Bool) {
        self.init(name: name, declaredType: declaredType, isNotNull: isNotNull, defaultValueSQL: defaultValueSQL,
                  primaryKeyPosition: primaryKeyPosition, isGenerated: isGenerated)
    }

    /// The SQLite type affinity the declared type gives (`INTEGER`, `TEXT`, `BLOB`, `REAL`, `NUMERIC`).
    public var affinity: String {
        let t = declaredType.uppercased()
        if t.contains("INT") { return "INTEGER" }
        if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") { return "TEXT" }
        if t.isEmpty || t.contains("BLOB") { return "BLOB" }
        if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }

    /// True when the column is meant to hold numbers: INTEGER or REAL affinity, or NUMERIC
    /// affinity declared as a number (`DECIMAL(10,2)`, `NUMERIC`, `BOOLEAN`); not the other names
    /// SQLite gives NUMERIC affinity (`DATETIME`, `DATE`, `STRING`, `JSON`), which files keep as text.
    public var holdsNumbers: Bool {
        switch affinity {
        case "INTEGER", "REAL": return true
        case "NUMERIC":
            // NUMERIC is also SQLite's affinity for any name it does not know (STRING, JSON,
            // DATETIME): only NUMERIC, DECIMAL and BOOLEAN (and their spellings) promise numbers.
            let t = declaredType.uppercased()
            return t.contains("NUM") || t.contains("DEC") || t.contains("BOOL")
        default: return false
        }
    }
}

/// A to-one relationship, from a foreign key of this entity to another entity.
public struct Relationship: Sendable, Hashable {
    /// The name used in key paths: the foreign key column without its `_id`/`Id` suffix when it has
    /// one (`director_id` → `director`), else the destination table's name, else the column name.
    public let name: String
    /// The destination table.
    public let destinationEntityName: String
    /// The columns of this entity that hold the reference.
    public let sourceColumns: [String]
    /// The referenced columns of the destination; empty means its primary key.
    public let destinationColumns: [String]
    /// What happens to this entity's rows when the destination row is deleted.
    public let deleteRule: DeleteRule
}

extension Relationship {
    /// A foreign key as a catalog describes it, before it is named.
    package struct ForeignKey: Sendable {
        package var destination: String
        package var sourceColumns: [String]
        package var destinationColumns: [String]
        package var deleteRule: DeleteRule

        package init(destination: String, sourceColumns: [String], destinationColumns: [String], deleteRule: DeleteRule) {
            self.destination = destination
            self.sourceColumns = sourceColumns
            self.destinationColumns = destinationColumns
            self.deleteRule = deleteRule
        }
    }

    /// One table's foreign keys (in declaration order) as relationships, named as key paths use
    /// them: a single column without its `_id` / `Id` suffix (`director_id` → `director`); else the
    /// column itself when several keys lead to the same table; else the destination table's name.
    /// One rule for every engine's catalog.
    package static func fromForeignKeys(_ keys: [ForeignKey]) -> [Relationship] {
        let tableCounts = Dictionary(keys.map { ($0.destination.lowercased(), 1) }, uniquingKeysWith: +)
        return keys.map { key in
            var name = key.destination
            if key.sourceColumns.count == 1 {
                let column = key.sourceColumns[0]
                if column.count > 3, column.lowercased().hasSuffix("_id") {
                    name = String(column.dropLast(3))
                } else if column.count > 2, column.hasSuffix("Id") {
                    name = String(column.dropLast(2))
                } else if tableCounts[key.destination.lowercased(), default: 0] > 1 {
                    name = column
                }
            }
            return Relationship(name: name, destinationEntityName: key.destination, sourceColumns: key.sourceColumns,
                                destinationColumns: key.destinationColumns, deleteRule: key.deleteRule)
        }
    }
}

extension Array where Element == Relationship {
    /// The relationship with this name (exact, then case-insensitive), or whose single source
    /// column has this name: how key paths find a relationship, whatever the engine.
    package func relationship(named name: String) -> Relationship? {
        first { $0.name == name }
            ?? first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
            ?? first { $0.sourceColumns.count == 1 && $0.sourceColumns[0].caseInsensitiveCompare(name) == .orderedSame }
    }
}

/// A table or view of a store, with its attributes, key and relationships.
///
/// Entities are compared by identity: two stores opened on the same file have distinct entities.
public final class Entity: Hashable, Sendable, CustomStringConvertible {
    /// What kind of schema object backs the entity.
    public enum Kind: String, Sendable {
        /// A rowid table: objects are keyed by rowid.
        case table
        /// A `WITHOUT ROWID` table: objects are keyed by the primary key columns.
        case withoutRowidTable
        /// A view: read-only; its rows have no stable key.
        case view
    }

    /// The table or view name, exactly as declared.
    public let name: String
    /// Table, WITHOUT ROWID table, or view.
    public let kind: Kind
    /// The name of the store the entity belongs to.
    public let storeName: String
    /// Columns in declaration order.
    public let attributes: [Attribute]
    /// Primary key column names in key order (empty for views and tables without a declared key).
    public let primaryKey: [String]
    /// Each UNIQUE constraint or unique index, as its column names (the primary key included).
    public let uniquenessConstraints: [[String]]
    /// To-one relationships from foreign keys.
    public let relationships: [Relationship]
    /// Names of the columns that lead an index (the first column of each index), for sort hints.
    public let indexedColumns: Set<String>

    let attributeIndex: [String: Int]
    /// For rowid tables: the name that reaches the rowid (`rowid`, `_rowid_` or `oid`, whichever no
    /// column shadows), or nil when all three are shadowed (then the table is keyed like a view).
    let rowidName: String?
    /// The key columns another engine gives (a PostgreSQL table's primary key, or `ctid`), in
    /// place of what ``kind`` implies; nil for SQLite.
    let explicitKeyColumns: [String]?
    /// Why the engine refuses edits whatever the key (PostgreSQL's: a table browsed by `ctid`, the
    /// role's privileges), or nil.
    package let engineReadOnlyReason: String?
    /// The SQL of the query whose result this entity is (see `PersistentStore.Options.query`),
    /// written in its reads as the subquery `(<query>) AS t`; nil for a table or view.
    public let query: String?
    /// For a query's entity: the tables whose rows its rows name by key, which its edits act on
    /// (``QueryEditTable``), in the order their keys appear among its columns; empty otherwise.
    public let editTables: [QueryEditTable]

    convenience init(name: String, kind: Kind, storeName: String, attributes: [Attribute], uniquenessConstraints: [[String]],
                     relationships: [Relationship], indexedColumns: Set<String>) {
        self.init(name: name, kind: kind, storeName: storeName, attributes: attributes, uniquenessConstraints: uniquenessConstraints,
                  relationships: relationships, indexedColumns: indexedColumns, keyColumns: nil, readOnlyReason: nil)
    }

    /// An entity of another engine's table or view, keyed by `keyColumns` (empty: no stable key,
    /// like a view). `kind` is `.withoutRowidTable` for a keyed table, `.view` for the rest.
    package init(name: String, kind: Kind, storeName: String, attributes: [Attribute], uniquenessConstraints: [[String]],
                 relationships: [Relationship], indexedColumns: Set<String>, keyColumns: [String]?, readOnlyReason: String?,
                 query: String? = nil, editTables: [QueryEditTable] = []) {
        self.query = query
        self.editTables = editTables
        self.explicitKeyColumns = keyColumns
        self.engineReadOnlyReason = readOnlyReason
        self.name = name
        self.kind = kind
        self.storeName = storeName
        self.attributes = attributes
        self.primaryKey = attributes.compactMap { a in a.primaryKeyPosition.map { (position: $0, name: a.name) } }
            .sorted { $0.position < $1.position }.map(\.name)
        self.uniquenessConstraints = uniquenessConstraints
        self.relationships = relationships
        self.indexedColumns = indexedColumns
        var index: [String: Int] = [:]
        for (i, a) in attributes.enumerated() where index[a.name] == nil { index[a.name] = i }
        self.attributeIndex = index
        if kind == .table, keyColumns == nil {
            let lower = Set(attributes.map { $0.name.lowercased() })
            self.rowidName = ["rowid", "_rowid_", "oid"].first { !lower.contains($0) }
        } else {
            self.rowidName = nil
        }
    }

    /// True for views, which batch requests and saves refuse.
    public var isReadOnly: Bool { kind == .view || keyColumns.isEmpty || engineReadOnlyReason != nil }

    /// The attribute with this name (exact match first, then case-insensitive as SQLite does).
    public func attribute(named name: String) -> Attribute? {
        if let i = attributeIndex[name] { return attributes[i] }
        return attributes.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The index of the attribute in ``attributes``, matched as ``attribute(named:)`` does.
    public func indexOfAttribute(named name: String) -> Int? {
        if let i = attributeIndex[name] { return i }
        return attributes.firstIndex { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The relationship with this name, or whose single source column has this name.
    public func relationship(named name: String) -> Relationship? {
        relationships.relationship(named: name)
    }

    /// The SQL expressions (relative to a table alias) that identify a row, or empty when rows have no
    /// stable key (views, or tables whose rowid names are all shadowed and that declare no key).
    package var keyColumns: [String] {
        if let explicitKeyColumns { return explicitKeyColumns }
        switch kind {
        case .table:
            if let rowidName { return [rowidName] }
            return primaryKey
        case .withoutRowidTable: return primaryKey
        case .view: return []
        }
    }

    /// ` RETURNING "k1", …`: the key columns, for batch statements that report the rows they changed.
    var returningKeysSQL: String { " RETURNING " + keyColumns.map(quoteIdentifier).joined(separator: ", ") }

    /// True when objects are keyed by rowid.
    var isKeyedByRowid: Bool { kind == .table && rowidName != nil }

    /// True when objects are keyed by a rowid that no column declares: a table without an
    /// `INTEGER PRIMARY KEY` (key-less, or keyed by other columns). Such a rowid is SQLite's own
    /// bookkeeping, which it may give a new row once the old one is deleted.
    var hasHiddenRowid: Bool {
        guard isKeyedByRowid else { return false }
        guard primaryKey.count == 1, let key = attribute(named: primaryKey[0]) else { return true }
        return key.declaredType.uppercased() != "INTEGER"
    }

    public var description: String { "\(storeName).\(name)" }

    public static func == (lhs: Entity, rhs: Entity) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// All entities of a store, in schema order.
public struct Schema: Sendable {
    /// Tables first, then views, each in name order.
    public let entities: [Entity]
    /// Views SQLite refuses to compile on this connection (for example one that calls a function
    /// a file may not use with `trusted_schema` off), with SQLite's reason. They are not entities.
    public var unreadableViews: [String: String] = [:]

    init(entities: [Entity], unreadableViews: [String: String] = [:]) {
        self.entities = entities
        self.unreadableViews = unreadableViews
    }

    /// The entity with this name (exact, then case-insensitive as SQLite resolves names).
    public func entity(named name: String) -> Entity? {
        entities.first { $0.name == name } ?? entities.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }
}
