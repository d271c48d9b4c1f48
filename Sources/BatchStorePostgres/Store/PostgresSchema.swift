import BatchStore
import Foundation

/// A column of a PostgreSQL table or view, as the catalogs describe it.
public struct PostgresColumn: Sendable, Hashable {
    /// The column name, exactly as declared.
    public let name: String
    /// The type as PostgreSQL writes it (`format_type`): `integer`, `character varying(20)`,
    /// `numeric(10,2)`, `timestamp with time zone`, `integer[]`, a domain's or an enum's name.
    public let declaredType: String
    /// The OID of the column's type (a domain's own OID for a domain).
    public let typeOID: Int64
    /// The OID of the type whose values the column holds: the base type of a domain, else ``typeOID``.
    public let baseTypeOID: Int64
    /// What the column's values are read as.
    public let kind: PostgresValueKind
    /// True when the column is declared NOT NULL.
    public let isNotNull: Bool
    /// The DEFAULT expression's SQL text, if any (`nextval('t_id_seq'::regclass)`).
    public let defaultValueSQL: String?
    /// Position (1-based) in the primary key, or nil when the column is not part of it.
    public let primaryKeyPosition: Int?
    /// True for generated columns (`GENERATED ALWAYS AS (…) STORED`), which cannot be written.
    public let isGenerated: Bool

    /// The select-list expression that reads this column of the row under `alias` as its ``kind``.
    public func selectExpression(alias: String = "t") -> String {
        kind.selectExpression("\(alias).\(quoteIdentifier(name))", typeOID: baseTypeOID)
    }
}

/// A table, view, materialized view or foreign table of a PostgreSQL database.
public struct PostgresTable: Sendable, Hashable, CustomStringConvertible {
    /// What kind of relation backs it.
    public enum Kind: String, Sendable {
        case table
        case partitionedTable
        case view
        case materializedView
        case foreignTable
    }

    /// How a row is found again.
    public enum RowKey: Sendable, Hashable {
        /// By the primary key's columns, in key order.
        case primaryKey([String])
        /// By `ctid`, the row's physical place: a table without a primary key, browsable but
        /// read-only (an update or `VACUUM FULL` moves a row to another ctid).
        case ctid
        /// No stable key: views, materialized views, and partitioned or foreign tables without a primary key.
        case none
    }

    /// The name used to pick the table: the bare name when the search path finds it
    /// (`pg_table_is_visible`), else `schema.name`.
    public let name: String
    /// The schema (namespace) it lives in.
    public let schemaName: String
    /// Its name within the schema.
    public let relationName: String
    /// Its OID in `pg_class`.
    public let oid: Int64
    /// Table, partitioned table, view, materialized view or foreign table.
    public let kind: Kind
    /// The name of the store it belongs to.
    public let storeName: String
    /// Columns in declaration order (dropped columns left out).
    public let columns: [PostgresColumn]
    /// Primary key column names in key order (empty without one).
    public let primaryKey: [String]
    /// How rows are keyed.
    public let rowKey: RowKey
    /// True when rows are found by a primary key (not by `ctid`, not at all).
    public var hasPrimaryKey: Bool { if case .primaryKey = rowKey { true } else { false } }
    /// Each unique constraint or unique index over plain columns (no expression, no WHERE), the
    /// primary key first.
    public let uniquenessConstraints: [[String]]
    /// To-one relationships from foreign keys, in creation order, named as SQLite stores name them.
    public let relationships: [Relationship]
    /// Names of the columns that lead an index, for sort hints.
    public let indexedColumns: Set<String>
    /// What the connecting role may do with the table (`has_table_privilege`).
    public let canSelect: Bool
    public let canInsert: Bool
    public let canUpdate: Bool
    public let canDelete: Bool

    /// `"schema"."name"`: the table in SQL, whatever the search path.
    public var qualifiedSQL: String { quoteIdentifier(schemaName) + "." + quoteIdentifier(relationName) }

    /// Why edits are refused, or nil when the table can be edited.
    public var readOnlyReason: String? {
        switch kind {
        case .view: return "\(name) is a view"
        case .materializedView: return "\(name) is a materialized view"
        case .table, .partitionedTable, .foreignTable: break
        }
        switch rowKey {
        case .ctid: return "\(name) has no primary key (its rows are browsed by ctid, which moves when a row is updated)"
        case .none: return "\(name) has no primary key"
        case .primaryKey: break
        }
        if !canInsert && !canUpdate && !canDelete { return "the role may not insert, update or delete in \(name)" }
        return nil
    }

    /// Why even an edit that names no row by key (a predicate's `UPDATE` or `DELETE`) is refused
    /// here: a view, or no privilege to change rows; nil when such edits are allowed (a table
    /// without a primary key takes them).
    public var unkeyedEditRefusal: String? {
        switch kind {
        case .view: return "\(name) is a view"
        case .materializedView: return "\(name) is a materialized view"
        case .table, .partitionedTable, .foreignTable: break
        }
        if !canInsert && !canUpdate && !canDelete { return "the role may not insert, update or delete in \(name)" }
        return nil
    }

    /// True when edits are refused (see ``readOnlyReason``).
    public var isReadOnly: Bool { readOnlyReason != nil }

    /// The column with this name (exact match first, then case-insensitive).
    public func column(named name: String) -> PostgresColumn? {
        columns.first { $0.name == name } ?? columns.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The relationship with this name, or whose single source column has this name.
    public func relationship(named name: String) -> Relationship? {
        relationships.relationship(named: name)
    }

    public var description: String { "\(storeName).\(name)" }
}

/// The tables and views of a PostgreSQL database, read from its catalogs.
public struct PostgresSchema: Sendable {
    /// Tables (plain, partitioned, foreign) first, then views and materialized views, each in name order.
    /// Temporary tables, the system schemas and partitions (their parent stands for them) are left out.
    public let tables: [PostgresTable]

    /// The table with this name: its ``PostgresTable/name``, or `schema.name`; exact, then case-insensitive.
    public func table(named name: String) -> PostgresTable? {
        if let exact = tables.first(where: { $0.name == name }) ?? tables.first(where: { "\($0.schemaName).\($0.relationName)" == name }) {
            return exact
        }
        // Another case only when it names one table: with "Pet" and "pet", PET names neither.
        let folded = tables.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        return folded.count == 1 ? folded[0] : nil
    }

    /// The tables whose names differ from `name` in case only (when there are several, none is chosen).
    public func tables(foldingCaseOf name: String) -> [PostgresTable] {
        tables.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }
}

extension PostgresSchema {
    /// The relations a store shows, as a subquery of OIDs.
    static let relations = """
        SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition AND c.relpersistence <> 't'
          AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
        """

    /// Reads the schema with four catalog queries (relations, columns, indexes, foreign keys):
    ///
    /// ```sql
    /// SELECT … FROM pg_class c JOIN pg_namespace n … WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') …
    /// SELECT … FROM pg_attribute a JOIN pg_type … LEFT JOIN pg_attrdef …   -- domains resolved to their base type
    /// SELECT … FROM pg_index i, unnest(i.indkey) WITH ORDINALITY …
    /// SELECT … FROM pg_constraint con, unnest(con.conkey, con.confkey) WITH ORDINALITY … WHERE con.contype = 'f'
    /// ```
    /// - Complexity: four round trips; the rows grow with the number of tables and columns, not rows.
    public static func read(from session: PostgresSession, storeName: String) throws -> PostgresSchema {
        let relationRows = try session.query("""
            SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, pg_catalog.pg_table_is_visible(c.oid),
                   pg_catalog.has_table_privilege(c.oid, 'SELECT'), pg_catalog.has_table_privilege(c.oid, 'INSERT'),
                   pg_catalog.has_table_privilege(c.oid, 'UPDATE'), pg_catalog.has_table_privilege(c.oid, 'DELETE')
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.oid IN (\(relations))
            """)
        let columnRows = try session.query("""
            WITH RECURSIVE domains(oid, base) AS (
                SELECT t.oid, t.typbasetype FROM pg_catalog.pg_type t WHERE t.typtype = 'd'
              UNION ALL
                SELECT d.oid, t.typbasetype FROM domains d JOIN pg_catalog.pg_type t ON t.oid = d.base WHERE t.typtype = 'd'
            )
            SELECT a.attrelid::int8, a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), a.atttypid::int8,
                   b.oid::int8, b.typname::text, b.typcategory::text, a.attnotnull,
                   pg_catalog.pg_get_expr(d.adbin, d.adrelid), a.attgenerated::text <> ''
            FROM pg_catalog.pg_attribute a
            JOIN pg_catalog.pg_type b ON b.oid = COALESCE(
                (SELECT dm.base FROM domains dm JOIN pg_catalog.pg_type bt ON bt.oid = dm.base
                 WHERE dm.oid = a.atttypid AND bt.typtype <> 'd'), a.atttypid)
            LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid IN (\(relations)) AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attrelid, a.attnum
            """)
        let indexRows = try session.query("""
            SELECT i.indrelid::int8, i.indexrelid::int8, i.indisprimary, i.indisunique AND i.indpred IS NULL, a.attname::text
            FROM pg_catalog.pg_index i CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
            LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
            WHERE i.indrelid IN (\(relations)) AND k.n <= i.indnkeyatts
            ORDER BY i.indrelid, i.indisprimary DESC, i.indexrelid, k.n
            """)
        let keyRows = try session.query("""
            SELECT con.conrelid::int8, con.oid::int8, con.confdeltype::text, dn.nspname::text, dc.relname::text,
                   pg_catalog.pg_table_is_visible(dc.oid), sa.attname::text, da.attname::text
            FROM pg_catalog.pg_constraint con CROSS JOIN LATERAL unnest(con.conkey, con.confkey) WITH ORDINALITY AS k(src, dst, n)
            JOIN pg_catalog.pg_class dc ON dc.oid = con.confrelid
            JOIN pg_catalog.pg_namespace dn ON dn.oid = dc.relnamespace
            JOIN pg_catalog.pg_attribute sa ON sa.attrelid = con.conrelid AND sa.attnum = k.src
            JOIN pg_catalog.pg_attribute da ON da.attrelid = con.confrelid AND da.attnum = k.dst
            WHERE con.contype = 'f' AND con.conrelid IN (\(relations))
            ORDER BY con.conrelid, con.oid, k.n
            """)
        return try assemble(relations: relationRows, columns: columnRows, indexes: indexRows, keys: keyRows, storeName: storeName)
    }

    /// The bare name when the search path finds the relation, else `schema.name`.
    static func displayName(schema: String, relation: String, visible: Bool) -> String {
        visible ? relation : "\(schema).\(relation)"
    }

    // The catalog rows, in the select lists' order above, into tables.
    static func assemble(relations: [[SQLValue]], columns: [[SQLValue]], indexes: [[SQLValue]], keys: [[SQLValue]],
                         storeName: String) throws -> PostgresSchema {
        func int(_ v: SQLValue) throws -> Int64 {
            guard let i = v.integerValue else { throw BatchStoreError(.postgres("XX000"), "unexpected catalog value \(v)") }
            return i
        }
        func text(_ v: SQLValue) throws -> String {
            guard let s = v.textValue else { throw BatchStoreError(.postgres("XX000"), "unexpected catalog value \(v)") }
            return s
        }
        func bool(_ v: SQLValue) -> Bool { v.integerValue == 1 }

        // Indexes: primary key, unique column sets, leading columns.
        var primaryKeys: [Int64: [String]] = [:]
        var unique: [Int64: [[String]]] = [:]
        var indexed: [Int64: Set<String>] = [:]
        var index: (table: Int64, id: Int64, primary: Bool, unique: Bool, columns: [String?])?
        func finishIndex() {
            guard let i = index else { return }
            if let first = i.columns.first, let first { indexed[i.table, default: []].insert(first) }
            let plain = i.columns.compactMap { $0 }
            if i.primary { primaryKeys[i.table] = plain }
            if (i.primary || i.unique) && plain.count == i.columns.count && !(unique[i.table, default: []].contains(plain)) {
                unique[i.table, default: []].append(plain)
            }
        }
        for row in indexes {
            let table = try int(row[0]), id = try int(row[1])
            if index?.id != id {
                finishIndex()
                index = (table, id, bool(row[2]), bool(row[3]), [])
            }
            index?.columns.append(row[4].textValue)
        }
        finishIndex()

        // Foreign keys, grouped by constraint in creation order.
        var foreignKeys: [Int64: [Relationship.ForeignKey]] = [:]
        var lastConstraint: Int64?
        for row in keys {
            let table = try int(row[0]), constraint = try int(row[1])
            if lastConstraint != constraint {
                lastConstraint = constraint
                let destination = displayName(schema: try text(row[3]), relation: try text(row[4]), visible: bool(row[5]))
                foreignKeys[table, default: []].append(Relationship.ForeignKey(
                    destination: destination, sourceColumns: [], destinationColumns: [], deleteRule: deleteRule(try text(row[2]))))
            }
            let last = foreignKeys[table, default: []].count - 1
            foreignKeys[table]?[last].sourceColumns.append(try text(row[6]))
            foreignKeys[table]?[last].destinationColumns.append(try text(row[7]))
        }

        // Columns by relation.
        var columnsOf: [Int64: [PostgresColumn]] = [:]
        for row in columns {
            let table = try int(row[0])
            let name = try text(row[1])
            let baseOID = try int(row[4])
            let position = primaryKeys[table]?.firstIndex(of: name).map { $0 + 1 }
            columnsOf[table, default: []].append(PostgresColumn(
                name: name, declaredType: try text(row[2]), typeOID: try int(row[3]), baseTypeOID: baseOID,
                kind: PostgresValueKind(typeOID: baseOID, category: try text(row[6])),
                isNotNull: bool(row[7]), defaultValueSQL: row[8].textValue, primaryKeyPosition: position, isGenerated: bool(row[9])))
        }

        var tables: [PostgresTable] = []
        for row in relations {
            let oid = try int(row[0])
            let schema = try text(row[1]), relation = try text(row[2])
            let kind: PostgresTable.Kind
            switch try text(row[3]) {
            case "r": kind = .table
            case "p": kind = .partitionedTable
            case "v": kind = .view
            case "m": kind = .materializedView
            default: kind = .foreignTable
            }
            let primaryKey = primaryKeys[oid] ?? []
            let rowKey: PostgresTable.RowKey = !primaryKey.isEmpty ? .primaryKey(primaryKey) : (kind == .table ? .ctid : .none)
            tables.append(PostgresTable(
                name: displayName(schema: schema, relation: relation, visible: bool(row[4])), schemaName: schema,
                relationName: relation, oid: oid, kind: kind, storeName: storeName, columns: columnsOf[oid] ?? [],
                primaryKey: primaryKey, rowKey: rowKey, uniquenessConstraints: unique[oid] ?? [],
                relationships: Relationship.fromForeignKeys(foreignKeys[oid] ?? []), indexedColumns: indexed[oid] ?? [],
                canSelect: bool(row[5]), canInsert: bool(row[6]), canUpdate: bool(row[7]), canDelete: bool(row[8])))
        }
        tables.sort { a, b in
            let aView = a.kind == .view || a.kind == .materializedView, bView = b.kind == .view || b.kind == .materializedView
            return aView != bView ? !aView : a.name < b.name
        }
        return PostgresSchema(tables: tables)
    }

    /// `pg_constraint.confdeltype` as a delete rule.
    static func deleteRule(_ code: String) -> DeleteRule {
        switch code {
        case "c": return .cascade
        case "n": return .nullify
        case "d": return .setDefault
        case "r": return .deny
        default: return .noAction
        }
    }
}

extension PostgresTable: KeyPathTable {
    /// A relationship that names no destination columns joins on the primary key.
    package var joinColumns: [String] { primaryKey }
    package var columnNames: [String] { columns.map(\.name) }
}
