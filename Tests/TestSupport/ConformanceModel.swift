import BatchStore
import Foundation

/// One definition of the batched-result conformance suite's data and model, run against every
/// kind of result: one SQLite store, several (`ConformanceTests`), and PostgreSQL
/// (`PostgresConformanceTests`), each through ``batchedResultFailures(_:expected:stores:)``.
public enum ConformanceModel {
    /// A row: which store, its key, and the values the fetch filters and sorts on.
    public struct Row: Sendable {
        public var store: Int
        public var id: Int64
        public var v: Int64?
        public var name: String
    }

    /// `sizes[i]` rows for store `i` of `m(id, v, name)`: gaps in the keys, values that repeat
    /// (ties), some NULL; the same rows for the same seed.
    public static func rows(sizes: [Int], seed: UInt64) -> [Row] {
        var state = seed
        func next(_ n: Int) -> Int64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int64((state >> 33) % UInt64(n))
        }
        var rows: [Row] = []
        for (store, size) in sizes.enumerated() {
            var id: Int64 = 0
            for _ in 0..<size {
                id += 1 + next(3)
                let v: Int64? = next(10) == 0 ? nil : next(7)
                let name = "n\(next(5))"
                rows.append(Row(store: store, id: id, v: v, name: name))
            }
        }
        return rows
    }

    /// The answer: filter `v >= 2` when `filtered`, sort by `v DESC` (NULLs last, as SQLite sorts
    /// them in descending order) or by `name ASC`, ties by store then key; offset, then limit.
    public static func expected(_ rows: [Row], stores: Set<Int>, filtered: Bool, sort: Int, limit: Int, offset: Int) -> [Row] {
        var chosen = rows.filter { stores.contains($0.store) && (!filtered || ($0.v ?? Int64.min) >= 2) }
        chosen.sort { a, b in
            switch sort {
            case 1:
                if a.v != b.v {
                    switch (a.v, b.v) {
                    case (nil, _): return false
                    case (_, nil): return true
                    case let (x?, y?): return x > y
                    }
                }
            case 2:
                if a.name != b.name { return a.name < b.name }
            default: break
            }
            return (a.store, a.id) < (b.store, b.id)
        }
        let dropped = Array(chosen.dropFirst(offset))
        return limit > 0 ? Array(dropped.prefix(limit)) : dropped
    }

    /// The fetch the model answers.
    public static func request(filtered: Bool, sort: Int, limit: Int, offset: Int, batch: Int) throws -> BatchStore.FetchRequest {
        let sorts: [BatchStore.SortDescriptor] = sort == 1 ? try SortDescriptor.parse("v desc") : sort == 2 ? try SortDescriptor.parse("name") : []
        return BatchStore.FetchRequest(entityName: "m", predicate: filtered ? try FetchPredicate("v >= 2") : nil, sortDescriptors: sorts,
                                       fetchLimit: limit, fetchOffset: offset, fetchBatchSize: batch)
    }

    /// Every combination the suite runs: batch size, resident batches, limit and offset, sort,
    /// and whether the filter applies.
    public static var combinations: [(batch: Int, resident: Int, limit: Int, offset: Int, sort: Int, filtered: Bool)] {
        var all: [(Int, Int, Int, Int, Int, Bool)] = []
        for batch in [1, 3, 10, 100] {
            for resident in [1, 2, 8] {
                for (limit, offset) in [(0, 0), (1, 0), (5, 3), (0, 4), (1000, 1)] {
                    for sort in 0...2 { all.append((batch, resident, limit, offset, sort, (batch + limit + sort) % 2 == 0)) }
                }
            }
        }
        return all
    }
}
