import BatchStore
import Foundation

extension PostgresQueryBuilder {
    // MARK: Assignments

    /// The guards a batch update's or insert's values go through, as PL/pgSQL functions of the
    /// session's `pg_temp` (PL/pgSQL is in every database unless it was dropped):
    /// `pg_temp.bs_integral(v, column)`: `v` when it has no fraction, else an error naming the
    /// column and the value, for integer columns: one for float8, checked in float8 (a whole float8
    /// casts to int8 exactly; through numeric it would keep 15 digits only), one for numeric;
    /// `pg_temp.bs_boolean(v, column)`: true for 1, false for 0, else an error.
    static let guardFunctions = ["float8", "numeric"].map { type in """
        CREATE OR REPLACE FUNCTION pg_temp.bs_integral(v \(type), col text) RETURNS \(type) LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
          IF v <> trunc(v) THEN
            RAISE EXCEPTION '% holds integers, and the new value % has a fraction', col, v USING ERRCODE = '22003';
          END IF;
          RETURN v;
        END $$
        """ } + ["""
        CREATE OR REPLACE FUNCTION pg_temp.bs_boolean(v float8, col text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
          IF v = 1 THEN RETURN true; ELSIF v = 0 THEN RETURN false; END IF;
          RAISE EXCEPTION '% holds booleans (1 or 0), and the new value is %', col, v USING ERRCODE = '22003';
        END $$
        """]

    /// Type OIDs whose explicit cast from text cuts a value that is too long (`bpchar`, `varchar`,
    /// `bit`, `varbit`): these take a new value by assignment, which refuses it instead.
    static let lengthLimitedTypes: Set<Int64> = [1042, 1043, 1560, 1562]
    /// Types whose every cast from text keeps only part of it (`"char"`: one byte, `name`: 63
    /// bytes): not written.
    static let cuttingTypes: Set<Int64> = [18, 19]

    /// The SQL that stores `o` in `column` of `table` as a batch update's new value: cast to the
    /// column's type as its input function reads text (a value it cannot read is an error naming
    /// it), a number with a fraction refused for an integer column (PostgreSQL's own cast would
    /// round it), nil as NULL. Length-limited text types (and domains over them, by base type)
    /// take the value by assignment, which refuses a value too long, where an explicit cast would
    /// cut it.
    func assignment(_ o: Operand, to column: PostgresColumn, in table: PostgresTable) throws -> String {
        let type = column.declaredType
        if Self.cuttingTypes.contains(column.baseTypeOID) {
            throw BatchStoreError(.invalidQuery, "\(table.name).\(column.name) is a \(type) column, whose casts cut text short: Faultline does not write it")
        }
        // A nil constant is bound as text: its cast is NULL of the column's type.
        if o.kind == .null { return "CAST(\(o.sql) AS \(type))" }
        func refuse() -> BatchStoreError {
            let what = o.kind == .blob ? "a blob" : o.kind == .text ? "text" : "a number"
            return BatchStoreError(.invalidQuery, "\(table.name).\(column.name) is a \(type) column, and \(o.name) is \(what)")
        }
        let lengthLimited = Self.lengthLimitedTypes.contains(column.baseTypeOID)
        func fromText(_ text: String) -> String {
            // bit(n) takes no text by assignment: through varbit, whose assignment checks the length.
            if [1560, 1562].contains(column.baseTypeOID) { return "CAST(\(text) AS varbit)" }
            return lengthLimited ? text : "CAST(\(text) AS \(type))"
        }
        switch column.kind {
        case .integer:
            switch o.kind {
            case .number where o.isInteger: return "CAST(CAST(\(o.sql) AS int8) AS \(type))"
            case .number:
                // The operand keeps its own type (float8 or numeric): the overload checks it exactly.
                let name = bind(.text(table.name + "." + column.name))
                return "CAST(CAST(pg_temp.bs_integral(\(o.sql), \(name)) AS int8) AS \(type))"
            case .text: return fromText(o.sql)
            default: throw refuse()
            }
        case .boolean:
            switch o.kind {
            // 1 and 0 only: PostgreSQL would read 2 or 0.5 as true, where SQLite keeps the number.
            case .number: return "pg_temp.bs_boolean((\(o.sql))::float8, \(bind(.text(table.name + "." + column.name))))"
            case .text: return "CAST(\(o.sql) AS \(type))"
            default: throw refuse()
            }
        case .real:
            guard o.kind == .number || o.kind == .text else { throw refuse() }
            return "CAST(\(o.sql) AS \(type))"
        case .numeric:
            // float8 to numeric keeps 15 digits; its text form is the shortest exact one.
            guard o.kind == .number || o.kind == .text else { throw refuse() }
            return o.kind == .number && !o.isInteger ? "CAST((\(o.sql))::text AS \(type))" : "CAST(\(o.sql) AS \(type))"
        case .blob:
            guard o.kind == .blob else { throw refuse() }
            return o.sql
        case .timestamp:
            // A number is no date: PostgreSQL would read 20010203 as 2001-02-03.
            guard o.kind == .text else { throw refuse() }
            return fromText(o.sql)
        case .text, .json, .uuid, .array:
            guard o.kind != .blob else { throw refuse() }
            return fromText(textForm(o))
        }
    }
}
