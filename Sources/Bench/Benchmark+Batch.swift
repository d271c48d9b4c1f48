import BatchStore
import FaultlineDemo
import Foundation
import GRDBSQLite

extension Benchmark {
    /// The WHERE clause of the batch benchmarks: about 24.5% of the demo rows (250k of 1M).
    static let batchPredicate = "year >= 2000"

    /// Figures for one batch operation: ours, raw SQLite, and the object-by-object path.
    struct BatchFigures: Sendable, Codable {
        var name: String
        var rows: Int
        var batchSeconds: Double
        var rawSeconds: Double
        var objectSeconds: Double?
        /// A raw row-by-row loop doing what the object path does (read every matching row with every
        /// column, then one statement per row by rowid, one transaction): the floor for any
        /// object-by-object implementation, ours or anyone's.
        var rowLoopSeconds: Double?
        var baseline: String
        var ratioToRaw: Double { rawSeconds > 0 ? batchSeconds / rawSeconds : 0 }
        var speedupOverObjects: Double? { objectSeconds.map { batchSeconds > 0 ? $0 / batchSeconds : 0 } }
        /// How much faster the batch request is than the raw row-by-row loop.
        var speedupOverRowLoop: Double? { rowLoopSeconds.map { batchSeconds > 0 ? $0 / batchSeconds : 0 } }
    }

    /// Where mutating trials run: a per-process folder in the temporary directory, never next to
    /// the user's file (an interrupted bench must not leave copies beside their data).
    static let scratchDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("faultline-bench-scratch-\(getpid())").path

    /// Removes the scratch folder and anything an interrupted trial left in it.
    static func removeScratchDirectory() {
        try? FileManager.default.removeItem(atPath: scratchDirectory)
    }

    /// Copies `path` (with its WAL, if any) into the scratch folder, for a mutating trial.
    static func scratchCopy(_ path: String, _ suffix: String) throws -> String {
        try FileManager.default.createDirectory(atPath: scratchDirectory, withIntermediateDirectories: true)
        let copy = scratchDirectory + "/" + (path as NSString).lastPathComponent + ".\(suffix)"
        for ext in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: copy + ext) }
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        if FileManager.default.fileExists(atPath: path + "-wal") { try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal") }
        return copy
    }

    static func removeScratch(_ copy: String) {
        for ext in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: copy + ext) }
    }

    static func rawExec(_ path: String, _ sql: String) throws -> (seconds: Double, changes: Int) {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else { throw BatchStoreError(.notADatabase, "cannot open \(path)") }
        defer { sqlite3_close_v2(db) }
        sqlite3_exec(db, "PRAGMA foreign_keys = ON", nil, nil, nil)
        var changes = 0
        let t = try time {
            guard sqlite3_exec(db, "BEGIN IMMEDIATE; \(sql); COMMIT", nil, nil, nil) == SQLITE_OK else {
                throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db)))
            }
            changes = Int(sqlite3_changes(db))
        }
        return (t, changes)
    }

    /// The raw row-by-row loop on `path`: `SELECT rowid, * FROM movie WHERE <batchPredicate>` read
    /// in full (every column, as objects would be), then `perRowSQL` bound with (rowid, votes) for
    /// each row, through one prepared statement, in one transaction.
    static func rawRowLoop(_ path: String, perRowSQL: String) throws -> Double {
        let raw = try RawConnection(path: path, readOnly: false)
        let db = raw.db
        try raw.exec("PRAGMA foreign_keys = ON")
        return try time {
            guard sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
            var rows: [(Int64, Int64)] = []
            try raw.forEachRow("SELECT rowid, * FROM movie WHERE \(batchPredicate)") { values in
                if case .integer(let rowid) = values[0], case .integer(let votes) = values[5] { rows.append((rowid, votes)) }
            }
            var stmt: OpaquePointer?
            guard sqlite3_prepare_v2(db, perRowSQL, -1, &stmt, nil) == SQLITE_OK else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
            defer { sqlite3_finalize(stmt) }
            let parameters = sqlite3_bind_parameter_count(stmt)
            for (rowid, votes) in rows {
                if parameters == 2 { sqlite3_bind_int64(stmt, 1, votes + 1); sqlite3_bind_int64(stmt, 2, rowid) } else { sqlite3_bind_int64(stmt, 1, rowid) }
                guard sqlite3_step(stmt) == SQLITE_DONE else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
                sqlite3_reset(stmt)
            }
            guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
        }
    }

    /// Times one mutating operation four ways, each on a fresh copy of `path`: raw SQL, the batch
    /// request, and (once each) the object-by-object path and the raw row-by-row loop.
    static func compareMutation(path: String, repeats: Int, objectPath: Bool, name: String, rawSQL: String, perRowSQL: String,
                                batch: (ManagedObjectContext) throws -> Void, objects: (String) throws -> Double) throws -> BatchFigures {
        var ours: [Double] = [], raw: [Double] = [], objectTimes: [Double] = [], loopTimes: [Double] = []
        var rows = 0
        for i in 0..<repeats {
            // Both copies first, flushed to disk, so that neither side runs while the kernel writes
            // back a fresh 1 GB copy; then each side first in turn.
            let a = try scratchCopy(path, "raw"); defer { removeScratch(a) }
            let b = try scratchCopy(path, "batch"); defer { removeScratch(b) }
            sync()
            for side in i % 2 == 0 ? ["raw", "ours"] : ["ours", "raw"] {
                if side == "raw" {
                    let r = try rawExec(a, rawSQL)
                    raw.append(r.seconds)
                    rows = r.changes
                } else {
                    let context = try ManagedObjectContext(store: try PersistentStore(path: b))
                    ours.append(try time { try batch(context) })
                }
            }
            if objectPath && i == 0 {
                let c = try scratchCopy(path, "objects"); defer { removeScratch(c) }
                objectTimes.append(try objects(c))
                let d = try scratchCopy(path, "rowloop"); defer { removeScratch(d) }
                loopTimes.append(try rawRowLoop(d, perRowSQL: perRowSQL))
            }
        }
        return BatchFigures(name: "\(name) of \(formatCount(rows)) rows", rows: rows, batchSeconds: median(ours), rawSeconds: median(raw),
                            objectSeconds: objectTimes.first, rowLoopSeconds: loopTimes.first, baseline: rawSQL)
    }

    /// Batch update vs raw `UPDATE … WHERE year >= 2000` vs fetching the objects and saving them one by one.
    static func batchUpdate(path: String, repeats: Int, objectPath: Bool = true) throws -> BatchFigures {
        try compareMutation(path: path, repeats: repeats, objectPath: objectPath, name: "batch update",
                            rawSQL: "UPDATE movie SET votes = votes + 1 WHERE \(batchPredicate)",
                            perRowSQL: "UPDATE movie SET votes = ? WHERE rowid = ?",
                            batch: { context in
                                // As the browser runs it: cancellable, its progress handler asked every 50 ms.
                                _ = try context.interruptible({ _ in .proceed }) {
                                    try context.execute(BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate(batchPredicate),
                                                                           propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes + 1"), resultType: .count))
                                }
                            }, objects: objectUpdate)
    }

    /// The object-by-object update: fetch every matching object, set a value, save once.
    static func objectUpdate(_ path: String) throws -> Double {
        try objectUpdate(context: try ManagedObjectContext(store: try PersistentStore(path: path)))
    }

    static func objectUpdate(context: ManagedObjectContext) throws -> Double {
        try time {
            let objects = try context.fetchAll(FetchRequest(entityName: "movie", predicate: try FetchPredicate(batchPredicate)))
            for o in objects {
                if case .integer(let v) = try o.value(forKey: "votes") { try o.setValue(.integer(v + 1), forKey: "votes") }
            }
            try context.save()
        }
    }

    /// Batch delete vs raw `DELETE … WHERE year >= 2000` vs deleting the objects one by one.
    static func batchDelete(path: String, repeats: Int, objectPath: Bool = true) throws -> BatchFigures {
        try compareMutation(path: path, repeats: repeats, objectPath: objectPath, name: "batch delete",
                            rawSQL: "DELETE FROM movie WHERE \(batchPredicate)",
                            perRowSQL: "DELETE FROM movie WHERE rowid = ?",
                            batch: { context in
                                // As the browser runs it: cancellable, its progress handler asked every 50 ms.
                                _ = try context.interruptible({ _ in .proceed }) {
                                    try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "movie", predicate: try FetchPredicate(batchPredicate)), resultType: .count))
                                }
                            }, objects: objectDelete)
    }

    static func objectDelete(_ path: String) throws -> Double {
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        return try time {
            let objects = try context.fetchAll(FetchRequest(entityName: "movie", predicate: try FetchPredicate(batchPredicate)))
            for o in objects { try context.delete(o) }
            try context.save()
        }
    }

    /// Batch insert of `rows` rows from dictionaries vs a raw prepared-statement loop in one transaction.
    static func batchInsert(path: String, rows: Int, repeats: Int) throws -> BatchFigures {
        let columns = ["title", "year", "rating", "votes", "genre", "director_id"]
        func row(_ i: Int) -> [SQLValue] {
            [.text("Inserted \(i)"), .integer(Int64(1920 + i % 106)), .real(Double(i % 100) / 10), .integer(Int64(i)), .text(DemoDatabase.genres[i % 10]), .integer(Int64(1 + i % 10))]
        }
        var ours: [Double] = [], raw: [Double] = []
        for _ in 0..<repeats {
            let a = try scratchCopy(path, "raw"); defer { removeScratch(a) }
            var db: OpaquePointer?
            guard sqlite3_open_v2(a, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else { throw BatchStoreError(.notADatabase, "cannot open \(a)") }
            sqlite3_exec(db, "PRAGMA foreign_keys = ON", nil, nil, nil)
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            raw.append(try time {
                var stmt: OpaquePointer?
                sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
                sqlite3_prepare_v2(db, "INSERT INTO movie (title, year, rating, votes, genre, director_id) VALUES (?, ?, ?, ?, ?, ?)", -1, &stmt, nil)
                for i in 0..<rows {
                    for (c, v) in row(i).enumerated() {
                        let idx = Int32(c + 1)
                        switch v {
                        case .text(let s): sqlite3_bind_text(stmt, idx, s, -1, transient)
                        case .integer(let n): sqlite3_bind_int64(stmt, idx, n)
                        case .real(let d): sqlite3_bind_double(stmt, idx, d)
                        default: sqlite3_bind_null(stmt, idx)
                        }
                    }
                    guard sqlite3_step(stmt) == SQLITE_DONE else { throw BatchStoreError(.sqlite(-1), String(cString: sqlite3_errmsg(db))) }
                    sqlite3_reset(stmt)
                }
                sqlite3_finalize(stmt)
                sqlite3_exec(db, "COMMIT", nil, nil, nil)
            })
            sqlite3_close_v2(db)
            let b = try scratchCopy(path, "batch"); defer { removeScratch(b) }
            let context = try ManagedObjectContext(store: try PersistentStore(path: b))
            var i = 0
            let request = BatchInsertRequest(entityName: "movie", resultType: .count) {
                guard i < rows else { return nil }
                defer { i += 1 }
                let values = row(i)
                return Dictionary(uniqueKeysWithValues: zip(columns, values))
            }
            ours.append(try time { _ = try context.execute(request) })
        }
        return BatchFigures(name: "batch insert of \(formatCount(rows)) rows from dictionaries", rows: rows, batchSeconds: median(ours), rawSeconds: median(raw),
                            objectSeconds: nil, rowLoopSeconds: nil, baseline: "prepared INSERT loop in one transaction (sqlite3_bind/step)")
    }

    /// Memory of one batch or object-path update in this (fresh) process, on a scratch copy: RSS at
    /// the start, once the store and context are open (the point the update starts from), and the
    /// peak.
    static func updateMemory(path: String, objects: Bool) throws -> (start: Int, opened: Int, peak: Int) {
        let copy = try scratchCopy(path, objects ? "mem-objects" : "mem-batch"); defer { removeScratch(copy) }
        let start = ProcessMemory.residentBytes()
        let context = try ManagedObjectContext(store: try PersistentStore(path: copy))
        _ = try context.count(for: FetchRequest(entityName: "movie", fetchLimit: 1))
        let opened = ProcessMemory.residentBytes()
        if objects {
            _ = try objectUpdate(context: context)
        } else {
            _ = try context.execute(BatchUpdateRequest(entityName: "movie", predicate: try FetchPredicate(batchPredicate),
                                                       propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes + 1"), resultType: .count))
        }
        return (start, opened, ProcessMemory.peakResidentBytes())
    }
}
