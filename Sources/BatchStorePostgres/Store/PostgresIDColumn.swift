import BatchStore
import Foundation

/// A column of a result's ID table on PostgreSQL: its name there, and the table column it copies
/// (whose type and kind say how to read it back and how to bind a value compared with it).
struct PostgresIDColumn {
    /// `key`, `k0`, `k1`, … or, for a relation without a key, `c0`, `c1`, …
    let name: String
    /// The SQL expression filling it, on the row under `t` (`t."id"`, `t.ctid`).
    let source: String
    /// How its values read: the column's kind, or text for `ctid`.
    let kind: PostgresValueKind
    let baseTypeOID: Int64
    /// The type a bound value is cast to before it is compared with the column (`bigint`, `tid`).
    let sqlType: String

    /// The column's source as the ID fetch's last sort key: text by code point (`COLLATE "C"`), as
    /// SQLite orders a text key, whatever the database's collation.
    var orderSQL: String { [25, 1042, 1043].contains(baseTypeOID) ? "\(source) COLLATE \"C\"" : source }

    /// A bound value (`$n`) as the column's type without its length or precision (a cast to
    /// `varchar(3)` would cut 'abcdef' to the key 'abc', one to `numeric(5,1)` round 1.04 to 1.0,
    /// and so name another row); a boolean key, read as 1 or 0, through int4.
    func cast(_ placeholder: String) -> String {
        if kind == .boolean { return "CAST(CAST(\(placeholder) AS int4) AS boolean)" }
        return "CAST(\(placeholder) AS \(Self.unlimited(sqlType, baseTypeOID: baseTypeOID)))"
    }

    /// `type` without a length or precision: the base type for the length-limited ones (and
    /// domains over them), otherwise the name with any `(n)` or `(p,s)` removed.
    static func unlimited(_ type: String, baseTypeOID: Int64) -> String {
        switch baseTypeOID {
        case 1042: return "bpchar"
        case 1043: return "varchar"
        case 1560, 1562: return "varbit"
        case 1700: return "numeric"
        case 1083: return "time"
        case 1266: return "timetz"
        case 1114: return "timestamp"
        case 1184: return "timestamptz"
        case 1186: return "interval"
        default: return type.replacingOccurrences(of: #"\(\d+(,\s*\d+)?\)"#, with: "", options: .regularExpression)
        }
    }

    /// The select-list expression that reads `source` on the row under `t` as an `SQLValue`
    /// (what a `RETURNING` or a first batch reads the key with).
    var readSource: String { kind.selectExpression(source, typeOID: baseTypeOID) }

    /// The select-list expression that reads the column under `alias` as an `SQLValue`.
    func read(_ alias: String) -> String { kind.selectExpression("\(alias).\(name)", typeOID: baseTypeOID) }

    /// The same column under another name (a journal's `k0`, `n0`).
    func named(_ newName: String) -> PostgresIDColumn {
        PostgresIDColumn(name: newName, source: source, kind: kind, baseTypeOID: baseTypeOID, sqlType: sqlType)
    }

    /// The ID columns of `table`: its primary key, its `ctid`, or every column.
    static func of(_ table: PostgresTable) -> [PostgresIDColumn] {
        switch table.rowKey {
        case .primaryKey(let names):
            let columns = names.compactMap { table.column(named: $0) }
            return columns.enumerated().map { i, c in
                PostgresIDColumn(name: columns.count == 1 ? "key" : "k\(i)", source: "t.\(quoteIdentifier(c.name))", kind: c.kind,
                                 baseTypeOID: c.baseTypeOID, sqlType: c.declaredType)
            }
        case .ctid:
            // ctid is unique within one table only: a parent's rows and its inheritance children's
            // can share one, so the table's OID goes with it.
            return [PostgresIDColumn(name: "k0", source: "t.tableoid", kind: .integer, baseTypeOID: 26, sqlType: "oid"),
                    PostgresIDColumn(name: "k1", source: "t.ctid", kind: .text, baseTypeOID: 27, sqlType: "tid")]
        case .none:
            return table.columns.enumerated().map { i, c in
                PostgresIDColumn(name: "c\(i)", source: "t.\(quoteIdentifier(c.name))", kind: c.kind, baseTypeOID: c.baseTypeOID, sqlType: c.declaredType)
            }
        }
    }
}

extension [PostgresIDColumn] {
    /// The columns' sources on the row under `t`, comma-separated (`t."id"`, `t."a", t."b"`): a key tuple's inside.
    var sourceList: String { map(\.source).joined(separator: ", ") }
}

/// How a result's positions find their rows in its ID table.
enum PostgresIDLayout: Equatable {
    /// `pos bigint PRIMARY KEY`, numbered by `row_number()`: any ID columns. A fault is a range
    /// scan of the index.
    case numbered
    /// No position column: the rows are in a fresh heap in result order, every one the same size,
    /// so position `p` (0-based) is tuple `(p / perPage, p % perPage + 1)`, and a fault is a TID
    /// range scan. Filling it is the `CREATE TEMP TABLE … AS SELECT … ORDER BY …` alone: numbering
    /// and indexing cost another 4 s on 10M rows (7.1 s in all, against 3.0 s).
    case packed(perPage: Int)
}
