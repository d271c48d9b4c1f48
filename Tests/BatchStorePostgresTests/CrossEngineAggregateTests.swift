import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// `F`, `B` and `I` (and the edits of a frequency sheet's values) on the same rows in SQLite and in
/// PostgreSQL: the same values with the same counts in the same order, the same bins, the same
/// summaries, and an edit of some values acting on exactly the rows counted, over random filters,
/// sorts, and the three ways of reading a result's rows.
extension CrossEngineTests {
    @Test("frequencies (plain and binned), summaries and edits of a sheet's values agree on both engines, over random filters, sorts and samples")
    func aggregatesAgree() throws {
        let server = try PostgresServer.require()
        var g = Generator(state: 2027)
        let dir = TempDir()
        // Text in a linguistic collation: values still order by code point, as on SQLite.
        let (rows, _, pg, context) = try Self.fixture(server, &g, dir: dir, name: "crossagg", textCollation: "und-x-icu")
        let pgContext = PostgresContext(store: pg)
        let columns = ["id", "n0", "x", "s", "b", "d", "f", "n", "i"]
        let numeric: Set<String> = ["id", "n0", "x", "n", "i"]
        var compared = 0, edits = 0
        let runs = max(10, Self.runs / 5)
        for run in 0..<runs {
            let tree = g.next(4) == 0 ? nil : Self.tree(&g, depth: 2)
            let sort = Self.sort(&g)
            let request = BatchStore.FetchRequest(entityName: "r", predicate: try tree.map { try FetchPredicate(format: $0.format) },
                                                  sortDescriptors: sort, fetchBatchSize: 16)
            let lite: BatchFaultingCollection
            do { lite = try context.fetchBatched(request) } catch { continue }   // a predicate SQLite refuses (compared elsewhere)
            let post = try pgContext.fetchBatched(request, residentBatches: 4, firstBatch: nil, progress: nil)
            #expect(lite.count == post.count, "run \(run): \(tree?.format ?? "all")")
            let column = g.pick(columns)
            let sampleSize = g.next(30) + 5
            let reading: ResultRows = g.pick([.fetched, .matchingNow, .sample(sampleSize)])
            let binned = numeric.contains(column) && g.next(3) == 0
            let someWidth: Int64 = g.pick([1, 2, 10, 1000])
            let width: Int64? = binned ? someWidth : nil
            let what = "run \(run): \(column) over \(tree?.format ?? "all") sorted by \(sort), \(reading), bins \(width.map(String.init) ?? "none")"

            let a = try lite.frequencies(of: column, binWidth: width, rows: reading)
            let b = try post.frequencies(of: column, binWidth: width, rows: reading)
            let left = try a.values(in: 0..<a.count), right = try b.values(in: 0..<b.count)
            #expect(left == right, "\(what)\n  SQLite: \(left)\n  PostgreSQL: \(right)")
            #expect(a.total == b.total && a.maxCount == b.maxCount && a.count == b.count, "\(what)")
            compared += 1

            if width == nil {
                var sa = try lite.summary(of: column, rows: reading), sb = try post.summary(of: column, rows: reading)
                // Declared types differ by engine, and so do the storage classes of the PostgreSQL
                // types read as text (a date) or as integers (a boolean); means may differ in the last bits.
                #expect(abs((sa.mean ?? 0) - (sb.mean ?? 0)) < 1e-9 * max(1, abs(sa.mean ?? 0)), "\(what): mean \(String(describing: sa.mean)) vs \(String(describing: sb.mean))")
                sa.declaredType = ""; sb.declaredType = ""
                sa.mean = nil; sb.mean = nil
                #expect(sa == sb, "\(what)\n  SQLite: \(sa)\n  PostgreSQL: \(sb)")
            }

            // An edit of some of the sheet's values counts exactly the rows the sheet counted for them.
            if case .sample = reading { continue }
            guard a.count > 0 else { continue }
            var picked: [Int] = []
            for _ in 0...g.next(3) { picked.append(g.next(a.count)) }
            picked = Array(Set(picked)).sorted()
            let counted = picked.reduce(0) { $0 + left[$1].count }
            let delete = BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "r"))
            let update = BatchUpdateRequest(entityName: "r", predicate: nil, propertiesToUpdate: try UpdateExpression.parseAssignments("i = i"), resultType: .count)
            #expect(try lite.count(forDelete: delete, values: try a.selection(at: picked)) == counted, "\(what): SQLite, values \(picked)")
            #expect(try post.count(forDelete: delete, values: try b.selection(at: picked)) == counted, "\(what): PostgreSQL, values \(picked)")
            #expect(try post.count(forUpdate: update, values: try b.selection(at: picked)) == counted, "\(what): PostgreSQL update, values \(picked)")
            // A selection made by hand from the values shown finds the same rows.
            let byHand = ValueSelection(attribute: column, values: picked.map { right[$0].value }, binWidth: width)
            #expect(try post.count(forDelete: delete, values: byHand) == counted, "\(what): PostgreSQL, by hand \(byHand.values)")
            // The recount finds each value again.
            for p in picked { #expect(try b.position(of: try b.selection(at: [p])) == p, "\(what): position of \(p)") }
            edits += 1
        }
        #expect(compared >= runs / 2 && edits >= runs / 4, "compared \(compared), edits \(edits) of \(runs)")

        // One real delete of a sheet's values on both engines leaves the same rows.
        let all = BatchStore.FetchRequest(entityName: "r", sortDescriptors: [SortDescriptor(key: "id", ascending: true)], fetchBatchSize: 16)
        let lite = try context.fetchBatched(all), post = try pgContext.fetchBatched(all, residentBatches: 4, firstBatch: nil, progress: nil)
        let a = try lite.frequencies(of: "s"), b = try post.frequencies(of: "s")
        let picked = [0, 2, min(5, a.count - 1)]
        let sheet = try a.values(in: 0..<a.count)
        let expected = picked.reduce(0) { $0 + sheet[$1].count }
        let delete = BatchDeleteRequest(fetchRequest: BatchStore.FetchRequest(entityName: "r"), resultType: .count)
        #expect(try lite.execute(delete, values: try a.selection(at: picked)).count == expected)
        #expect(try post.execute(delete, values: try b.selection(at: picked)).count == expected)
        let remaining = try context.fetchAll(all).compactMap { try $0.value(forKey: "id").integerValue }
        let pgRemaining = try pg.fetchBatched(all).compactMap { try $0?.value(forKey: "id").integerValue }
        #expect(remaining == pgRemaining && remaining.count == rows.count - expected)
    }
}
