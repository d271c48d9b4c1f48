import Foundation

/// One sort key: a key path (through to-one relationships) and a direction.
public struct SortDescriptor: Sendable, Equatable, CustomStringConvertible {
    /// The key path, split at dots.
    public let keyPath: [String]
    /// Ascending (NULLs first, as SQLite sorts) or descending.
    public let ascending: Bool

    public init(key: String, ascending: Bool = true) {
        self.keyPath = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        self.ascending = ascending
    }

    /// A sort key from an already split key path (a column name may itself contain dots).
    public init(keyPath: [String], ascending: Bool) {
        self.keyPath = keyPath
        self.ascending = ascending
    }

    public var description: String { keyPath.joined(separator: ".") + (ascending ? " asc" : " desc") }

    /// Parses `"col [asc|desc], other desc"`. Names with spaces or keywords go in backticks.
    /// - Throws: `.syntax` naming the column of the problem.
    public static func parse(_ text: String) throws -> [SortDescriptor] {
        let tokens = try Lexer.tokenize(text, what: "sort")
        var result: [SortDescriptor] = []
        var i = 0
        func fail(_ t: Token, _ m: String) -> BatchStoreError { BatchStoreError(.syntax, "sort error at column \(t.column): \(m)") }
        if tokens.first?.kind == .end { throw fail(tokens[0], "expected a column name, found nothing") }
        while i < tokens.count {
            var path: [String] = []
            while true {
                let t = tokens[i]
                switch t.kind {
                case .identifier(let s): path.append(s)
                case .keyword(let k): path.append(k.lowercased())
                default: throw fail(t, "expected a column name, found \(t.text)")
                }
                i += 1
                if tokens[i].kind == .symbol(".") { i += 1; continue }
                break
            }
            var ascending = true
            if case .identifier(let w) = tokens[i].kind {
                switch w.lowercased() {
                case "asc", "ascending": i += 1
                case "desc", "descending": ascending = false; i += 1
                default: throw fail(tokens[i], "expected asc, desc or ',' after \(path.joined(separator: ".")), found \(w)")
                }
            }
            result.append(SortDescriptor(keyPath: path, ascending: ascending))
            if tokens[i].kind == .end { return result }
            guard tokens[i].kind == .symbol(",") else { throw fail(tokens[i], "expected ',' between sort keys, found \(tokens[i].text)") }
            i += 1
        }
        return result
    }
}

/// What a fetch returns.
public enum FetchResultType: Sendable {
    /// Managed objects (a ``BatchFaultingCollection`` when ``FetchRequest/fetchBatchSize`` > 0).
    case managedObject
    /// Object IDs only.
    case managedObjectID
    /// Dictionaries of ``FetchRequest/propertiesToFetch`` (all columns when nil).
    case dictionary
    /// The number of matching rows.
    case count
}

/// A description of rows to fetch: entity, predicate, sort, limit, offset and batch size.
public struct FetchRequest: Sendable {
    /// The table or view to fetch from.
    public var entityName: String
    /// The filter; nil matches every row.
    public var predicate: FetchPredicate?
    /// Sort keys, applied in order; the row key is always the last tiebreaker, so positions are stable.
    public var sortDescriptors: [SortDescriptor]
    /// At most this many rows; 0 means no limit.
    public var fetchLimit: Int
    /// Skip this many rows first.
    public var fetchOffset: Int
    /// Rows faulted per batch; 0 fetches everything at once (the eager path).
    public var fetchBatchSize: Int
    /// What ``ManagedObjectContext/execute(_:)`` returns.
    public var resultType: FetchResultType
    /// For dictionary results: the key paths to fetch (nil for every column).
    public var propertiesToFetch: [String]?
    /// True for the rows in exactly the reverse of the request's order: every sort key and the
    /// row-key tiebreaker flipped (NULLs then come last where they came first). With
    /// ``fetchLimit``, the last rows of the order, last first, read by the engine's own top-N
    /// (`ORDER BY … DESC LIMIT n`) without numbering every row: a browser shows them while the
    /// result's IDs are still being fetched.
    public var reversesOrder = false

    /// The sort keys as the statement applies them (flipped when ``reversesOrder``).
    package var effectiveSortDescriptors: [SortDescriptor] {
        reversesOrder ? sortDescriptors.map { SortDescriptor(keyPath: $0.keyPath, ascending: !$0.ascending) } : sortDescriptors
    }
    /// The direction of the row-key tiebreaker.
    package var keyDirection: String { reversesOrder ? "DESC" : "ASC" }

    public init(entityName: String, predicate: FetchPredicate? = nil, sortDescriptors: [SortDescriptor] = [],
                fetchLimit: Int = 0, fetchOffset: Int = 0, fetchBatchSize: Int = 0,
                resultType: FetchResultType = .managedObject, propertiesToFetch: [String]? = nil) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.fetchBatchSize = fetchBatchSize
        self.resultType = resultType
        self.propertiesToFetch = propertiesToFetch
    }
}

/// The result of ``ManagedObjectContext/execute(_:)``, by result type.
public enum FetchResult {
    case objects([ManagedObject])
    case batched(BatchFaultingCollection)
    case objectIDs([ObjectID])
    case dictionaries([[String: SQLValue]])
    case count(Int)
}

extension FetchRequest {
    /// Refuses a negative `fetchLimit` or `fetchOffset` (and, with `batchSize`, a negative
    /// `fetchBatchSize`) before anything runs.
    package func checkBounds(batchSize: Bool = false) throws {
        guard fetchLimit >= 0, fetchOffset >= 0, !batchSize || fetchBatchSize >= 0 else {
            let names = batchSize ? "fetchLimit, fetchOffset and fetchBatchSize" : "fetchLimit and fetchOffset"
            throw BatchStoreError(.invalidArgument, "\(names) must not be negative")
        }
    }
}
