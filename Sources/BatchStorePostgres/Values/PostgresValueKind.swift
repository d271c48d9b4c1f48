import BatchStore

/// What a PostgreSQL column's values become when read: the same kinds of value a SQLite store
/// gives (`SQLValue`), chosen from the column's type (a domain by its base type).
///
/// | kind | PostgreSQL types | read as |
/// | --- | --- | --- |
/// | integer | `smallint`, `integer`, `bigint`, `oid` | `.integer` |
/// | real | `real`, `double precision` | `.real` |
/// | numeric | `numeric` / `decimal` | `.text`, exactly as the server writes it (`12.50`) |
/// | boolean | `boolean` | `.integer` 1 or 0, as SQLite stores booleans |
/// | blob | `bytea` | `.blob` |
/// | timestamp | `date`, `time`, `timetz`, `timestamp`, `timestamptz` | `.text` in ISO 8601 (`2024-03-01 12:30:00+00`; the session's time zone is UTC) |
/// | json | `json`, `jsonb` | `.text` |
/// | uuid | `uuid` | `.text`, lower case |
/// | array | any array (`integer[]`, `text[]`) | `.text` as the server writes it (`{1,2,3}`) |
/// | text | `text`, `varchar`, `char`, `name`, enums, `interval`, `money`, network, geometric and every other type | `.text` as the server writes it |
public enum PostgresValueKind: String, Sendable, CaseIterable {
    case integer
    case real
    case numeric
    case boolean
    case blob
    case timestamp
    case json
    case uuid
    case array
    case text

    /// The `SQLValue` storage class a non-NULL value of this kind is read as (`integer`, `real`, `text`, `blob`).
    public var storageClass: String {
        switch self {
        case .integer, .boolean: return "integer"
        case .real: return "real"
        case .blob: return "blob"
        case .numeric, .timestamp, .json, .uuid, .array, .text: return "text"
        }
    }

    /// The kind of values of the type with this OID and `typcategory` (of the base type for a domain).
    init(typeOID: Int64, category: String) {
        switch typeOID {
        case 20, 21, 23, 26: self = .integer          // int8, int2, int4, oid
        case 700, 701: self = .real                   // float4, float8
        case 1700: self = .numeric
        case 16: self = .boolean
        case 17: self = .blob
        case 1082, 1083, 1266, 1114, 1184: self = .timestamp  // date, time, timetz, timestamp, timestamptz
        case 114, 3802: self = .json
        case 2950: self = .uuid
        default: self = category == "A" ? .array : .text
        }
    }

    /// The select-list expression that reads `column` (already qualified and quoted) so that the
    /// session decodes it into this kind's value: integers, reals, booleans and `bytea` as they
    /// are (binary on the wire), `oid` widened to `bigint`, everything else as the server's text.
    public func selectExpression(_ column: String, typeOID: Int64) -> String {
        switch self {
        case .integer: return typeOID == 26 ? "\(column)::int8" : column
        case .real, .boolean, .blob: return column
        case .numeric, .timestamp, .json, .uuid, .array, .text: return "\(column)::text"
        }
    }
}
