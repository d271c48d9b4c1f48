import BatchStore
import Browser
import Foundation
import GRDB
import TerminalCore

/// A model-based random run of the browser, on either engine (``BrowserModelEngine``): a seeded
/// generator drives a browser session on a real database (two tables, NULLs, non-ASCII text)
/// through table switches, filters, sorts, marks, `D`, `U`, `u`, `r`, `F` (with Enter on a value
/// and Esc back), the column keys (`c` with Tab, `-`, `+`, `H`, `L`, `!`; sorts and counts go to
/// their column with `c`), `e`, `:w`, `y`, Enter on a foreign key and `R`, and writes by another
/// connection. A plain Swift model predicts every table's rows, the result on screen and the
/// marks; the database is compared with the model after every step. On a failure the steps are
/// shrunk to a shortest sequence that still fails, which is returned. `make fuzz` runs longer
/// with FAULTLINE_MODEL_STEPS.
public enum BrowserModel {
    /// Runs `steps` random steps (in sessions of 500, each on a fresh database) on `engine`; nil
    /// when the browser, the database and the model agreed after every step, else the first
    /// failure and its shortest reproduction.
    public static func check(steps: Int, seed: UInt64, engine: BrowserModelEngine) throws -> String? {
        var rng = SplitMix64(seed: seed)
        // Several shorter sessions: a failure then shrinks within one session.
        let sessions = max(1, steps / 500)
        for session in 0..<sessions {
            let plan = (0..<(steps / sessions)).map { _ in Step.random(&rng) }
            guard let failure = try ModelRun.failure(plan, engine: engine) else { continue }
            let shortest = try ModelRun.shrink(plan, failure: failure.index, engine: engine)
            let final = try ModelRun.failure(shortest, engine: engine)
            return """
                \(engine.name), session \(session): \(final?.message ?? failure.message)
                shortest sequence that fails (\(shortest.count) steps):
                \(shortest.map(\.description).joined(separator: "\n"))
                """
        }
        return nil
    }

    /// The model's own check on `engine`: a delete the browser did not make (the model is told a
    /// row went, the database keeps it) must be a failure; its message, or nil if none was found.
    public static func failureOfAWrongModel(engine: BrowserModelEngine) throws -> String? {
        try ModelRun.failure([.open(0), .modelOnlyDelete], engine: engine)?.message
    }
}

/// What the model run needs of an engine: a fresh database holding its three tables, a browser
/// over it, another connection's writes, and a table read as the database holds it.
public struct BrowserModelEngine: Sendable {
    /// A row of `p` or `q`: `k` (a foreign key into `r`, or NULL) and `s`.
    public typealias Row = (k: Int?, s: String?)

    /// An open session over a fresh database.
    public struct Session {
        public let browser: Browser
        /// Runs `sql` (`?` placeholders, bound to `arguments`) on another connection.
        public let write: (_ sql: String, _ arguments: [SQLValue]) throws -> Void
        /// The rows of `table` by id, as the database holds them now.
        public let read: (_ table: String) throws -> [Int64: Row]
        /// Ends the other connection (called once the run is over).
        public let close: () -> Void

        public init(browser: Browser, write: @escaping (String, [SQLValue]) throws -> Void, read: @escaping (String) throws -> [Int64: Row],
                    close: @escaping () -> Void = {}) {
            self.browser = browser
            self.write = write
            self.read = read
            self.close = close
        }
    }

    public let name: String
    /// Makes `r(id, note)` with ids -100 … 5000 (`note` 'r' || id), and `p` and `q` `(id, k
    /// REFERENCES r, s)` holding `rows` (p's, then q's), in a fresh database in `dir`; opens a
    /// browser over it with `options` on an 80×12 in-memory screen, started.
    public let open: @Sendable (_ dir: TempDir, _ rows: [[Int64: Row]], _ options: BrowserOptions) throws -> Session

    public init(name: String, open: @escaping @Sendable (TempDir, [[Int64: Row]], BrowserOptions) throws -> Session) {
        self.name = name
        self.open = open
    }

    /// A SQLite file, written and read with GRDB on connections of its own.
    public static let sqlite = BrowserModelEngine(name: "SQLite") { dir, rows, options in
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE r(id INTEGER PRIMARY KEY, note TEXT);
            WITH RECURSIVE c(x) AS (SELECT -100 UNION ALL SELECT x + 1 FROM c WHERE x < 5000) INSERT INTO r SELECT x, 'r' || x FROM c;
            CREATE TABLE p(id INTEGER PRIMARY KEY, k INTEGER REFERENCES r(id), s TEXT);
            CREATE TABLE q(id INTEGER PRIMARY KEY, k INTEGER REFERENCES r(id), s TEXT);
            """)
        try direct(path) { db in
            for (t, table) in rows.enumerated() {
                for (id, row) in table { try db.execute(sql: "INSERT INTO \(ModelRun.tables[t]) VALUES (?, ?, ?)", arguments: [id, row.k, row.s]) }
            }
        }
        let browser = try Browser(store: try PersistentStore(path: path), options: options, backend: MemoryTerminal(width: 80, height: 12))
        browser.start()
        return Session(browser: browser, write: { sql, arguments in
            try direct(path) { db in try db.execute(sql: sql, arguments: statementArguments(arguments)) }
        }, read: { table in
            try direct(path) { db in
                var rows: [Int64: Row] = [:]
                for row in try GRDB.Row.fetchAll(db, sql: "SELECT id, k, s FROM \(table)") {
                    let id: Int64 = row[0]
                    rows[id] = (row[1], row[2])
                }
                return rows
            }
        })
    }
}


/// One step of a run, as a user (or another program) would take it.
enum Step: CustomStringConvertible, Equatable {
    case open(Int)                     // Esc, the table list, Enter on table N
    case filter(ModelFilter)
    case sort(column: Int, ascending: Bool)
    case go(row: Int)                  // :N
    case mark                          // v
    case markAll                       // V
    case delete                        // D y
    case update(Int)                   // U k = k + d, y
    case undo                          // u
    case reload                        // r
    case other(OtherWrite)
    /// F on a column: the counts against the model; with `value`, Enter on that value (its rows
    /// against the model), then Esc back; Esc back to the table.
    case frequency(column: Int, value: Int?)
    /// `c`, the column's first letter, Tab, Enter, then a column key.
    case columns(ColumnOp)
    /// Test of the test: the model deletes a row the file keeps.
    case modelOnlyDelete
    /// Enter on the row's k (a foreign key into r): r's row k, or no sheet when k is NULL; with
    /// `back` (1 or 2), R there, the prompt's choice (p or q), its rows against the model; Esc back.
    case follow(back: Int?)
    /// `:w FILE.tsv` or `:w FILE.json`: the file's ids against the model's result as the file holds it now.
    case write(json: Bool)
    /// `y t`: the copy's row against the model's row at the cursor.
    case copy
    /// F on a column, B some times, values marked (v) or every one (V) or the cursor's, then D or
    /// U on their rows (and perhaps u there); the sheet counted again, and the table, against the model.
    case frequencyEdit(FrequencyEditPlan)
    /// `e` on the cursor's k: Ctrl-U, the new value, Enter; the question names the one cell; `y`.
    case editCell(Int)

    static func random(_ rng: inout SplitMix64) -> Step {
        switch rng.below(152) {
        case 146..<152: return .editCell(rng.below(9) - 2)
        case 134..<146: return .frequencyEdit(FrequencyEditPlan.random(&rng))
        case 122..<127: return .follow(back: rng.below(3) == 0 ? nil : 1 + rng.below(2))
        case 127..<130: return .write(json: rng.below(2) == 0)
        case 130..<134: return .copy
        case 0..<8: return .open(rng.below(2))
        case 8..<22: return .filter(ModelFilter.random(&rng))
        case 22..<32: return .sort(column: rng.below(3), ascending: rng.below(2) == 0)
        case 32..<42: return .go(row: 1 + rng.below(30))
        case 42..<60: return .mark
        case 60..<63: return .markAll
        case 63..<71: return .delete
        case 71..<79: return .update(1 + rng.below(3))
        case 79..<86: return .undo
        case 86..<91: return .reload
        case 100..<110: return .frequency(column: rng.below(3), value: rng.below(3) == 0 ? nil : rng.below(6))
        case 110..<122: return .columns(ColumnOp.random(&rng))
        default: return .other(OtherWrite.random(&rng))
        }
    }

    var description: String {
        switch self {
        case .open(let t): return "Esc g \(String(repeating: "j ", count: t))Enter        (open \(ModelRun.tables[t]))"
        case .filter(let f): return "f Ctrl-U \(f.text) Enter"
        case .sort(let c, let asc): return "\(ModelRun.jumpText(c)) \(asc ? "s" : "S")        (sort by \(ModelRun.columns[c]))"
        case .go(let n): return ":\(n) Enter"
        case .mark: return "v"
        case .markAll: return "V"
        case .delete: return "D y"
        case .update(let d): return "U k = k + \(d) Enter y"
        case .undo: return "u"
        case .reload: return "r"
        case .other(let w): return "[another connection: \(w)]"
        case .frequency(let c, let v):
            return "\(ModelRun.jumpText(c)) F\(v.map { " g \(String(repeating: "j ", count: $0))Enter Esc" } ?? "") Esc        (frequencies of \(ModelRun.columns[c]))"
        case .columns(let op): return op.description
        case .modelOnlyDelete: return "[model only: delete]"
        case .follow(let back): return "\(ModelRun.jumpText(1)) Enter\(back.map { " R \($0) Enter Esc" } ?? "") Esc        (follow k to r)"
        case .write(let json): return ":w FILE.\(json ? "json" : "tsv") Enter"
        case .copy: return "y t"
        case .frequencyEdit(let plan): return plan.description
        case .editCell(let k): return "\(ModelRun.jumpText(1)) e Ctrl-U \(k) Enter y        (set the cell)"
        }
    }
}

struct FrequencyEditPlan: Equatable, CustomStringConvertible {
    var column: Int
    /// How many times B is pressed (numbers only: id and k).
    var bins: Int
    /// Positions on the sheet to mark with v (in order), or nil for V.
    var marked: [Int]?
    /// Where the cursor goes when nothing is marked.
    var cursor: Int
    /// nil: D; a number d: U k = k + d.
    var update: Int?
    /// u on the sheet after the edit.
    var undo: Bool

    static func random(_ rng: inout SplitMix64) -> FrequencyEditPlan {
        let column = rng.below(3)
        let bins = column == 2 ? 0 : [0, 0, 1, 1, 2][rng.below(5)]
        let marked: [Int]? = rng.below(8) == 0 ? nil : (0..<rng.below(3)).map { _ in rng.below(8) }
        return FrequencyEditPlan(column: column, bins: bins, marked: marked, cursor: rng.below(6),
                                 update: rng.below(2) == 0 ? nil : 1 + rng.below(3), undo: rng.below(3) == 0)
    }

    var description: String {
        let b = String(repeating: " B", count: bins)
        let marks = marked.map { $0.isEmpty ? " g \(String(repeating: "j ", count: cursor))" : " " + $0.map { "g \(String(repeating: "j ", count: $0))v" }.joined(separator: " ") } ?? " V"
        let edit = update.map { " U k = k + \($0) Enter y" } ?? " D y"
        return "\(ModelRun.jumpText(column)) F\(b)\(marks)\(edit)\(undo ? " u" : "") Esc        (edit the rows of \(ModelRun.columns[column])'s values)"
    }
}

/// A column key after going to a column with `c`.
enum ColumnOp: Equatable, CustomStringConvertible {
    case hide(Int), showAll, move(Int, right: Bool), freeze(Int), jump(Int)

    static func random(_ rng: inout SplitMix64) -> ColumnOp {
        switch rng.below(6) {
        case 0, 1: return .hide(rng.below(3))
        case 2: return .showAll
        case 3: return .move(rng.below(3), right: rng.below(2) == 0)
        case 4: return .freeze(rng.below(3))
        default: return .jump(rng.below(3))
        }
    }

    var description: String {
        switch self {
        case .hide(let c): return "\(ModelRun.jumpText(c)) -        (hide \(ModelRun.columns[c]))"
        case .showAll: return "+"
        case .move(let c, let right): return "\(ModelRun.jumpText(c)) \(right ? "L" : "H")"
        case .freeze(let c): return "\(ModelRun.jumpText(c)) !"
        case .jump(let c): return ModelRun.jumpText(c)
        }
    }
}

/// The model of a table's column arrangement: order, hidden columns, frozen count.
struct ModelColumns: Equatable {
    var order = [0, 1, 2]
    var hidden: Set<Int> = []
    var frozen = 0
    var shown: [Int] { order.filter { !hidden.contains($0) } }

    /// `c` to a hidden column shows it again; the frozen columns stay the same columns.
    mutating func unhide(_ c: Int) {
        guard hidden.contains(c) else { return }
        let lastFrozen = frozen > 0 ? shown[frozen - 1] : nil
        hidden.remove(c)
        frozen = lastFrozen.flatMap { shown.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
    }
}

/// Filters whose meaning is exact in plain Swift: integer comparisons, == on text, == nil.
enum ModelFilter: Equatable {
    case none, kGreater(Int), kEquals(Int), kNil, kNotNil, sEquals(String)

    static func random(_ rng: inout SplitMix64) -> ModelFilter {
        switch rng.below(6) {
        case 0: return .none
        case 1: return .kGreater(rng.below(14) - 1)
        case 2: return .kEquals(rng.below(14))
        case 3: return .kNil
        case 4: return .kNotNil
        default: return .sEquals(ModelRun.texts.compactMap { $0 }[rng.below(ModelRun.texts.count - 1)])
        }
    }

    var text: String {
        switch self {
        case .none: return ""
        case .kGreater(let n): return "k > \(n)"
        case .kEquals(let n): return "k == \(n)"
        case .kNil: return "k == nil"
        case .kNotNil: return "k != nil"
        case .sEquals(let s): return "s == \"\(s)\""
        }
    }

    func matches(_ row: ModelRow) -> Bool {
        switch self {
        case .none: return true
        case .kGreater(let n): return row.k.map { $0 > n } ?? false
        case .kEquals(let n): return row.k == n
        case .kNil: return row.k == nil
        case .kNotNil: return row.k != nil
        case .sEquals(let s): return row.s.map { Array($0.utf8) == Array(s.utf8) } ?? false
        }
    }
}

/// A write by another connection.
enum OtherWrite: Equatable, CustomStringConvertible {
    case insert(table: Int, k: Int?)
    case setK(table: Int, id: Int64, k: Int?)
    case delete(table: Int, id: Int64)

    static func random(_ rng: inout SplitMix64) -> OtherWrite {
        let t = rng.below(2)
        switch rng.below(3) {
        case 0: return .insert(table: t, k: rng.below(4) == 0 ? nil : rng.below(13))
        case 1: return .setK(table: t, id: Int64(1 + rng.below(30)), k: rng.below(4) == 0 ? nil : rng.below(13))
        default: return .delete(table: t, id: Int64(1 + rng.below(30)))
        }
    }

    var description: String {
        switch self {
        case .insert(let t, let k): return "INSERT INTO \(ModelRun.tables[t]) (k) VALUES (\(k.map(String.init) ?? "NULL"))"
        case .setK(let t, let id, let k): return "UPDATE \(ModelRun.tables[t]) SET k = \(k.map(String.init) ?? "NULL") WHERE id = \(id)"
        case .delete(let t, let id): return "DELETE FROM \(ModelRun.tables[t]) WHERE id = \(id)"
        }
    }
}

struct ModelRow: Equatable {
    var k: Int?
    var s: String?
}

/// The model: every table's rows, the result on screen (its IDs as fetched), its filter and sort,
/// each table's remembered filter and sort, the marks and the undo stack. Plain Swift only.
struct Model {
    var rows: [[Int64: ModelRow]]
    var table: Int?
    var filters: [ModelFilter] = [.none, .none]
    var sorts: [(column: Int, ascending: Bool)?] = [nil, nil]
    /// The result's IDs in order, as the last fetch found them.
    var fetched: [Int64] = []
    var marks: Set<Int64> = []
    var allMarked = false
    /// Before-images: the table, and the rows as they were (nil: the row did not exist); an
    /// update's after-image of k too (undo leaves alone the rows changed since).
    var undo: [(table: Int, before: [Int64: ModelRow?], kind: Kind, after: [Int64: Int?])] = []
    var nextID: Int64 = 1000
    /// Rows another connection changed: the browser may show them as fetched.
    var touched: Set<Int64> = []
    /// Each table's column arrangement (the table list keeps it).
    var views = [ModelColumns(), ModelColumns()]
    /// The arrangement of the table on screen.
    var view: ModelColumns {
        get { views[table ?? 0] }
        set { views[table ?? 0] = newValue }
    }
    enum Kind { case update, delete }

    /// The rows of table `t` that match its filter now, in the result's order.
    func result(_ t: Int) -> [Int64] {
        let filter = filters[t]
        var ids = rows[t].filter { filter.matches($0.value) }.map(\.key)
        ids.sort { a, b in
            if let sort = sorts[t], let ra = rows[t][a], let rb = rows[t][b] {
                let order = Model.compare(ra, rb, column: sort.column, a, b)
                if order != 0 { return sort.ascending ? order < 0 : order > 0 }
            }
            return a < b
        }
        return ids
    }

    /// SQLite's order for one column: NULL first, integers by value, text by UTF-8 bytes.
    static func compare(_ a: ModelRow, _ b: ModelRow, column: Int, _ ida: Int64, _ idb: Int64) -> Int {
        switch column {
        case 0: return ida < idb ? -1 : (ida > idb ? 1 : 0)
        case 1:
            switch (a.k, b.k) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?): return x < y ? -1 : (x > y ? 1 : 0)
            }
        default:
            switch (a.s, b.s) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?):
                let (u, v) = (Array(x.utf8), Array(y.utf8))
                return u == v ? 0 : (u.lexicographicallyPrecedes(v) ? -1 : 1)
            }
        }
    }

    /// `u`: the last edit's rows as they were before it (an update's k on the rows that still
    /// exist, a delete's rows back); false with nothing to undo.
    @discardableResult
    mutating func undoLast() -> Bool {
        guard let last = undo.popLast() else { return false }
        for (id, row) in last.before where !changedSince(last, id) {
            switch last.kind {
            case .update: if let row { rows[last.table][id]?.k = row.k }
            case .delete: rows[last.table][id] = row
            }
        }
        return true
    }

    /// True when row `id` of `edit` changed after it (undo leaves it alone): an updated row gone or
    /// whose k is no longer what the update wrote; a deleted row whose id names a row again.
    func changedSince(_ edit: (table: Int, before: [Int64: ModelRow?], kind: Kind, after: [Int64: Int?]), _ id: Int64) -> Bool {
        switch edit.kind {
        case .update:
            guard let now = rows[edit.table][id] else { return true }
            return edit.after[id].map { $0 != now.k } ?? true
        case .delete:
            return rows[edit.table][id] != nil
        }
    }

    /// A new result of the current table: marks stay only where their rows are in it.
    mutating func refetch(keepingMarks: Bool) {
        guard let t = table else { return }
        fetched = result(t)
        let now = Set(fetched)
        if keepingMarks { marks = marks.intersection(now) } else { marks = []; allMarked = false }
    }

    /// The rows an edit acts on now, as the browser's SQL selects them.
    func target(updating: Bool) -> [Int64] {
        guard let t = table else { return [] }
        let inResult = fetched.filter { rows[t][$0] != nil }
        if !allMarked && !marks.isEmpty {
            // Marked rows of the result; an update also asks the filter again.
            return inResult.filter { marks.contains($0) && (!updating || filters[t].matches(rows[t][$0] ?? ModelRow())) }
        }
        return inResult.filter { id in rows[t][id].map { filters[t].matches($0) } ?? false }
    }
}

enum ModelRun {
    static let tables = ["p", "q"]
    static let columns = ["id", "k", "s"]
    static let texts: [String?] = ["grüße", "東京", "", "a", "Ω", "naïve", "zebra", nil]

    /// Keys from a string: each character is a key press.
    static func keys(_ s: String) -> [Key] { s.map { .char($0) } }

    struct Failure { var index: Int; var message: String }

    static func initialRows() -> [[Int64: ModelRow]] {
        var p: [Int64: ModelRow] = [:], q: [Int64: ModelRow] = [:]
        for i in 1...30 { p[Int64(i)] = ModelRow(k: i % 5 == 0 ? nil : (i * 7) % 13, s: texts[i % 8]) }
        for i in 1...25 { q[Int64(i)] = ModelRow(k: i % 6 == 0 ? nil : i % 4, s: texts[(i * 3) % 8]) }
        return [p, q]
    }

    /// Runs `steps` on a fresh database of `engine`; the first disagreement, or nil.
    static func failure(_ steps: [Step], engine: BrowserModelEngine) throws -> Failure? {
        let dir = TempDir()
        // k of p and q is a foreign key into r, which holds every id k can reach (never edited).
        var model = Model(rows: initialRows())
        var options = BrowserOptions(batchSize: 7)
        options.copyDirectory = dir.path("copies")
        let session = try engine.open(dir, model.rows.map { $0.mapValues { ($0.k, $0.s) } }, options)
        defer { session.close() }
        let b = session.browser
        for (i, step) in steps.enumerated() {
            if let message = try apply(step, to: b, model: &model, session: session, folder: dir.url.path) { return Failure(index: i, message: "step \(i + 1) (\(step)): \(message)") }
            if let message = try check(b, model, session: session) { return Failure(index: i, message: "after step \(i + 1) (\(step)): \(message)") }
        }
        return nil
    }

    /// Sends `step`'s keys (or makes its write) and moves the model the same way; a message when
    /// what the browser shows on the way disagrees with the model.
    static func apply(_ step: Step, to b: Browser, model: inout Model, session: BrowserModelEngine.Session, folder: String) throws -> String? {
        let inGrid = model.table != nil
        switch step {
        case .open(let t):
            b.send([.escape, .char("g")] + Array(repeating: Key.char("j"), count: t) + [.enter])
            // The same table again keeps the marks whose rows are in the new result; each table keeps its columns as arranged.
            let same = model.table == t
            model.table = t
            model.allMarked = false
            model.refetch(keepingMarks: same)
        case .filter(let f):
            guard let t = model.table else { return nil }
            b.send([.char("f"), .ctrl("u")] + keys(f.text) + [.enter])
            model.filters[t] = f
            model.allMarked = false
            model.refetch(keepingMarks: true)
        case .sort(let c, let asc):
            guard let t = model.table else { return nil }
            b.send(jumpKeys(c) + keys(asc ? "s" : "S"))
            model.view.unhide(c)
            model.sorts[t] = (c, asc)
            model.allMarked = false
            model.refetch(keepingMarks: true)
        case .go(let n):
            guard inGrid else { return nil }
            b.send(keys(":\(n)") + [.enter])
        case .mark:
            guard inGrid, let t = model.table else { return nil }
            let row = b.state.cursorRow
            let shown = b.state.snapshot(row)
            b.send(.char("v"))
            guard row < model.fetched.count else { return nil }
            if model.allMarked { return nil }
            let expected = model.fetched[row]
            guard let id = shown?.id else {
                // Only a row deleted since the fetch shows without an ID.
                return model.rows[t][expected] == nil ? nil : "row \(row + 1) showed no ID but id \(expected) exists"
            }
            guard let r = id.keyValues.first?.integerValue, r == expected else { return "row \(row + 1) is \(id), the model says id \(expected)" }
            if model.marks.contains(r) { model.marks.remove(r) } else { model.marks.insert(r) }
        case .markAll:
            guard inGrid else { return nil }
            b.send(.char("V"))
            model.allMarked.toggle()
            model.marks = []
        case .delete, .update:
            guard inGrid, let t = model.table else { return nil }
            if b.state.count == 0 { b.send(.char(step == .delete ? "D" : "U")); return nil }
            let target = model.target(updating: step != .delete)
            var d: Int?
            if case .update(let by) = step { d = by }
            if let wrong = confirmEdit(update: d, of: target, table: t, browser: b, model: &model) { return wrong }
            let said = target.count == 1 ? "1 row " : "\(group(target.count)) rows "
            if b.state.message?.contains(said) != true { return "the message says \(b.state.message ?? "nothing"), the model \(said)" }
            model.refetch(keepingMarks: false)
        case .undo:
            guard inGrid else { return nil }
            b.send(.char("u"))
            // u asks first, saying what it takes back; with nothing to undo it says so and asks nothing.
            guard let last = model.undo.last else {
                if b.state.isConfirming || b.state.message != "nothing to undo" { return "u with nothing to undo: \(b.state.mode), \(b.state.message ?? "no message")" }
                return nil
            }
            guard case .confirm(.undo(let summary)) = b.state.mode else { return "u asked nothing: \(b.state.message ?? "no message")" }
            let kindMatches: Bool
            switch (summary.kind, last.kind) {
            case (.delete, .delete), (.update, .update): kindMatches = true
            default: kindMatches = false
            }
            let changed = last.before.keys.filter { model.changedSince(last, $0) }.count
            if summary.rows != last.before.count || summary.table != Self.tables[last.table] || !kindMatches || summary.changedSince != changed {
                return "u asks about \(summary), the model's last edit is a \(last.kind) of \(last.before.count) rows of \(last.table), \(changed) changed since"
            }
            b.send(.char("y"))
            model.undoLast()
            model.refetch(keepingMarks: false)
        case .reload:
            guard inGrid else { return nil }
            b.send(.char("r"))
            model.refetch(keepingMarks: true)
        case .other(let w):
            switch w {
            case .insert(let t, let k):
                try session.write("INSERT INTO \(tables[t]) VALUES (?, ?, 'other')", [.integer(model.nextID), k.map { .integer(Int64($0)) } ?? .null])
                model.rows[t][model.nextID] = ModelRow(k: k, s: "other")
                model.nextID += 1
            case .setK(let t, let id, let k):
                model.touched.insert(id)
                try session.write("UPDATE \(tables[t]) SET k = ? WHERE id = ?", [k.map { .integer(Int64($0)) } ?? .null, .integer(id)])
                if model.rows[t][id] != nil { model.rows[t][id]?.k = k }
            case .delete(let t, let id):
                // The browser may still show the row as it fetched it (its batch is cached).
                model.touched.insert(id)
                try session.write("DELETE FROM \(tables[t]) WHERE id = ?", [.integer(id)])
                model.rows[t][id] = nil
            }
        case .frequency(let c, let v):
            guard inGrid, let t = model.table else { return nil }
            return frequencyStep(column: c, value: v, table: t, browser: b, model: &model)
        case .columns(let op):
            guard inGrid else { return nil }
            return columnStep(op, browser: b, model: &model)
        case .modelOnlyDelete:
            if let t = model.table, let id = model.rows[t].keys.min() { model.rows[t][id] = nil }
        case .follow(let back):
            guard inGrid, let t = model.table else { return nil }
            model.view.unhide(1)
            return followStep(back: back, table: t, browser: b, model: model)
        case .editCell(let k):
            guard inGrid, let t = model.table else { return nil }
            model.view.unhide(1)
            b.send(jumpKeys(1))
            // A row another connection changed or deleted may show as fetched: not this step's business.
            guard let id = rowAtCursor(b, table: t, model: model), !model.touched.contains(id) else { return nil }
            b.send(.char("e"))
            let shown = model.rows[t][id]?.k.map(String.init) ?? "nil"
            guard b.state.mode == .prompt(.cellEdit, text: shown) else { return "e on k of \(id) opened \(b.state.mode), the model holds \(shown): \(b.state.message ?? "")" }
            b.send([.ctrl("u")] + keys(String(k)) + [.enter])
            guard case .confirm(.update(1, _, let target, _, _)) = b.state.mode, target.cell?.id.keyValues == [.integer(id)] else {
                return "e asked \(b.state.mode) for row \(id): \(b.state.message ?? "")"
            }
            b.send(.char("y"))
            if b.state.message?.hasPrefix("updated 1 row of \(Self.tables[t]); u undoes") != true { return "e said \(b.state.message ?? "nothing")" }
            model.undo.append((table: t, before: [id: model.rows[t][id]], kind: Model.Kind.update, after: [id: k]))
            model.rows[t][id]?.k = k
            // A cell edit is of one row, whatever is marked: the marks still in the result stay.
            model.refetch(keepingMarks: true)
        case .write(let json):
            guard inGrid, let t = model.table else { return nil }
            return writeStep(json: json, table: t, browser: b, model: model, folder: folder)
        case .copy:
            guard inGrid, let t = model.table else { return nil }
            return copyStep(table: t, browser: b, model: model, folder: folder + "/copies")
        case .frequencyEdit(let plan):
            guard inGrid, let t = model.table else { return nil }
            return frequencyEditStep(plan, table: t, browser: b, model: &model)
        }
        return nil
    }

    /// `U k = k + d Enter` (with `update`) or `D`: the confirmation must offer exactly `target`'s
    /// rows; `y`, and the model makes the same edit, with its before-image for `u`.
    static func confirmEdit(update d: Int?, of target: [Int64], table t: Int, browser b: Browser, model: inout Model) -> String? {
        var before: [Int64: ModelRow?] = [:]
        if let d {
            b.send([.char("U")] + keys("k = k + \(d)") + [.enter])
            guard case .confirm(.update(let n, _, _, _, _)) = b.state.mode else { return "U asked nothing: \(b.state.message ?? "")" }
            if n != target.count { return "U offered \(n) rows, the model \(target.count)" }
            b.send(.char("y"))
            var after: [Int64: Int?] = [:]
            for id in target {
                before[id] = model.rows[t][id]
                if let k = model.rows[t][id]?.k { model.rows[t][id]?.k = k + d }
                after[id] = model.rows[t][id]?.k
            }
            model.undo.append((table: t, before: before, kind: Model.Kind.update, after: after))
        } else {
            b.send(.char("D"))
            guard case .confirm(.delete(let n, _, _)) = b.state.mode else { return "D asked nothing: \(b.state.message ?? "")" }
            if n != target.count { return "D offered \(n) rows, the model \(target.count)" }
            b.send(.char("y"))
            for id in target { before[id] = model.rows[t][id]; model.rows[t][id] = nil }
            model.undo.append((table: t, before: before, kind: Model.Kind.delete, after: [:]))
        }
        return nil
    }

    /// The model's id at the cursor, when its row still exists (nil: gone, or no row).
    static func rowAtCursor(_ b: Browser, table t: Int, model: Model) -> Int64? {
        let row = b.state.cursorRow
        guard row < model.fetched.count, model.rows[t][model.fetched[row]] != nil else { return nil }
        return model.fetched[row]
    }

    /// Enter on k: r's row k as a sheet (one row, `id == k`), or nothing for NULL or a row gone;
    /// R there lists p and q; the choice's rows are those of the file with that k; Esc back to the table.
    static func followStep(back: Int?, table t: Int, browser b: Browser, model: Model) -> String? {
        b.send(jumpKeys(1))
        let id = rowAtCursor(b, table: t, model: model)
        let fetchedID = b.state.cursorRow < model.fetched.count ? model.fetched[b.state.cursorRow] : nil
        let count = b.state.count
        b.send(.enter)
        guard let id, let k = model.rows[t][id]?.k else {
            if b.state.sheetDepth != 0 && !model.touched.contains(fetchedID ?? -1) { return "Enter on a NULL k or a row gone opened \(b.state.sheetPath)" }
            if b.state.sheetDepth == 0 { return nil }
            b.send(.escape)
            return nil
        }
        if model.touched.contains(id), b.state.sheetDepth == 0 { return nil }
        guard b.state.table == "r", b.state.sheetDepth == 1, b.state.count == 1 else {
            return "Enter on k = \(k) opened \(b.state.table ?? "nothing") with \(b.state.count) rows at depth \(b.state.sheetDepth): \(b.state.message ?? "")"
        }
        if !model.touched.contains(id), b.state.filter != "id == \(k)" { return "Enter on k = \(k) filtered \(b.state.filter)" }
        if let back, case .text(let shownID)? = b.state.snapshot(0)?.values.first, let x = Int(shownID) {
            b.send([.char("R")] + keys("\(back)") + [.enter])
            let referring = model.rows[back - 1].values.filter { $0.k == x }.count
            guard b.state.table == tables[back - 1], b.state.sheetDepth == 2 else { return "R \(back) opened \(b.state.sheetPath): \(b.state.message ?? "")" }
            if b.state.count != referring || b.state.filter != "k == \(x)" { return "R \(back) opened \(b.state.count) rows (\(b.state.filter)), the model \(referring) with k == \(x)" }
            b.send(.escape)
        }
        b.send(.escape)
        if b.state.sheetDepth != 0 || b.state.count != count || b.state.table != tables[t] { return "Esc did not come back to \(tables[t]): \(b.state.sheetPath)" }
        return nil
    }

    /// `:w FILE.tsv` (one line per row after the header) or `:w FILE.json` (one array of objects):
    /// the rows of the result as the file holds it now (its filter and sort), in the model's order.
    static func writeStep(json: Bool, table t: Int, browser b: Browser, model: Model, folder: String) -> String? {
        let file = folder + "/w\(UInt32.random(in: 0...UInt32.max)).\(json ? "json" : "tsv")"
        b.send(keys(":w \(file)") + [.enter])
        guard let data = FileManager.default.contents(atPath: file) else { return ":w wrote nothing: \(b.state.message ?? "")" }
        try? FileManager.default.removeItem(atPath: file)
        let ids: [Int64?]
        if json {
            guard let objects = (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] else { return ":w wrote no JSON array: \(String(decoding: data.prefix(80), as: UTF8.self))" }
            ids = objects.map { ($0["id"] as? NSNumber)?.int64Value }
        } else {
            ids = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropFirst().dropLast().map { Int64($0.prefix { $0 != "\t" }) }
        }
        let expected = model.result(t)
        if ids != expected { return ":w wrote ids \(ids.prefix(8))… (\(ids.count)), the model \(expected.prefix(8))… (\(expected.count))" }
        if b.state.message?.hasPrefix("wrote \(rows(expected.count)) to ") != true { return ":w said \(b.state.message ?? "nothing")" }
        return nil
    }

    /// `y t`: the header and the row at the cursor, its id the model's.
    static func copyStep(table t: Int, browser b: Browser, model: Model, folder: String) -> String? {
        let id = rowAtCursor(b, table: t, model: model)
        b.send(keys("yt"))
        guard let id else { return nil }
        if model.allMarked || !model.marks.isEmpty { return nil }
        guard let text = try? String(contentsOfFile: folder + "/faultline-copy.tsv", encoding: .utf8) else { return "y t wrote nothing: \(b.state.message ?? "")" }
        let lines = text.split(separator: "\n")
        if lines.count != 2 || lines[0] != "id\tk\ts" || !lines[1].hasPrefix("\(id)\t") { return "y t copied \(lines), the model's row is id \(id)" }
        if b.state.message != "copied 1 row as TSV to \(folder)/faultline-copy.tsv" { return "y t said \(b.state.message ?? "nothing")" }
        return nil
    }

    static func rows(_ n: Int) -> String { "\(group(n)) \(n == 1 ? "row" : "rows")" }

    /// The value of `column` in `row`, as the frequency sheet shows it, and as a model value that
    /// sorts as SQLite sorts (NULL, then integers, then text by UTF-8 bytes).
    enum ModelValue: Hashable, Comparable {
        case null, int(Int64), text([UInt8])
        static func < (a: ModelValue, b: ModelValue) -> Bool {
            switch (a, b) {
            case (.null, .null): return false
            case (.null, _): return true
            case (_, .null): return false
            case (.int(let x), .int(let y)): return x < y
            case (.int, .text): return true
            case (.text, .int): return false
            case (.text(let x), .text(let y)): return x.lexicographicallyPrecedes(y)
            }
        }
        init(_ row: ModelRow, id: Int64, column: Int) {
            switch column {
            case 0: self = .int(id)
            case 1: self = row.k.map { .int(Int64($0)) } ?? .null
            default: self = row.s.map { .text(Array($0.utf8)) } ?? .null
            }
        }
        var shown: DisplayValue {
            switch self {
            case .null: return .null
            case .int(let i): return .text(String(i))
            case .text(let b): return .text(String(decoding: b, as: UTF8.self))
            }
        }
    }

    /// F on `column`: the sheet's values and counts are the model's over the rows of the result
    /// that still exist; Enter on value `value` opens exactly the table's rows that match the
    /// filter and hold it; Esc, Esc go back (``check(_:_:session:)`` then checks the table as it was).
    static func frequencyStep(column c: Int, value v: Int?, table t: Int, browser b: Browser, model: inout Model) -> String? {
        b.send(jumpKeys(c) + keys("F"))
        model.view.unhide(c)
        let existing = model.fetched.compactMap { id in model.rows[t][id].map { ModelValue($0, id: id, column: c) } }
        var counts: [ModelValue: Int] = [:]
        for value in existing { counts[value, default: 0] += 1 }
        let expected = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        guard let sheet = b.state.frequencySheet else { return "F opened no frequency sheet: \(b.state.message ?? "")" }
        if sheet.total != existing.count { return "F counted \(sheet.total) rows, the model \(existing.count)" }
        if b.state.count != expected.count { return "F found \(b.state.count) values, the model \(expected.count)" }
        for (i, row) in b.state.window.enumerated() {
            let pos = b.state.windowStart + i
            guard pos < expected.count else { break }
            let want = [expected[pos].key.shown, .text(group(expected[pos].value))]
            if Array(row.values.prefix(2)) != want { return "frequency row \(pos + 1) is \(row.values.prefix(2)), the model \(want)" }
        }
        if let v, v < expected.count {
            b.send([.char("g")] + Array(repeating: Key.char("j"), count: v) + [.enter])
            let value = expected[v].key
            let matching = model.rows[t].filter { model.filters[t].matches($0.value) && ModelValue($0.value, id: $0.key, column: c) == value }.count
            if b.state.sheet != .table || b.state.sheetDepth != 2 { return "Enter on value \(v + 1) opened no sheet: \(b.state.message ?? "")" }
            if b.state.count != matching { return "Enter on \(value) (\(b.state.filter)) opened \(b.state.count) rows, the model \(matching)" }
            b.send(.escape)
            if b.state.frequencySheet == nil || b.state.cursorRow != v { return "Esc did not go back to the frequency sheet on value \(v + 1)" }
        }
        b.send(.escape)
        if b.state.sheet != .table || b.state.sheetDepth != 0 { return "Esc did not go back to the table" }
        return nil
    }

    /// The frequency sheet the model expects of column `c` of the result on screen (its rows that
    /// still exist, their values now), in bins of `width` for a number: (value or bin, count),
    /// most frequent first, ties by value as SQLite orders them; bins by their lower bound.
    static func expectedFrequencies(column c: Int, width: Int64?, table t: Int, model: Model) -> [(key: ModelValue, value: Int)] {
        var counts: [ModelValue: Int] = [:]
        for id in model.fetched {
            guard let row = model.rows[t][id] else { continue }
            counts[binned(ModelValue(row, id: id, column: c), width: width), default: 0] += 1
        }
        // Bins are in the order of their ranges (a histogram); values most frequent first.
        if width != nil { return counts.sorted { $0.key < $1.key } }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }

    /// A value in its bin of `width`: a number's bin is its lower bound, floor(n / width) * width.
    static func binned(_ v: ModelValue, width: Int64?) -> ModelValue {
        guard let width, case .int(let n) = v else { return v }
        let q = n / width - ((n % width) < 0 ? 1 : 0)
        return .int(q * width)
    }

    /// The frequency sheet on screen against the model: its total, its number of values and the
    /// counts (and, unbinned, the values) of the rows in its window.
    static func checkFrequencySheet(_ b: Browser, expected: [(key: ModelValue, value: Int)], total: Int, binned: Bool) -> String? {
        guard let sheet = b.state.frequencySheet else { return "no frequency sheet on screen: \(b.state.message ?? "")" }
        if sheet.total != total { return "the sheet counted \(sheet.total) rows, the model \(total)" }
        if b.state.count != expected.count { return "the sheet has \(b.state.count) values, the model \(expected.count)" }
        for (i, row) in b.state.window.enumerated() {
            let pos = b.state.windowStart + i
            guard pos < expected.count else { break }
            let count = DisplayValue.text(group(expected[pos].value))
            if binned ? row.values.dropFirst().first != count : Array(row.values.prefix(2)) != [expected[pos].key.shown, count] {
                return "frequency row \(pos + 1) is \(row.values.prefix(2)), the model \(expected[pos].key.shown) \(count)"
            }
        }
        return nil
    }

    /// ``FrequencyEditPlan``: F, B, the marks, then D or U with the exact count the model expects
    /// (the result's rows that still exist, match its filter now and hold one of the values now);
    /// the sheet counted again after it (and after u) against the model; Esc back to the table.
    static func frequencyEditStep(_ plan: FrequencyEditPlan, table t: Int, browser b: Browser, model: inout Model) -> String? {
        let c = plan.column
        b.send(jumpKeys(c) + keys("F"))
        model.view.unhide(c)
        guard b.state.frequencySheet != nil else { return "F opened no frequency sheet: \(b.state.message ?? "")" }
        // B's widths: powers of ten giving 1 to 1,000 bins over the numbers' span (the library's rule).
        var width: Int64?
        let numbers = model.fetched.compactMap { id -> Int64? in
            guard let row = model.rows[t][id] else { return nil }
            if case .int(let n) = ModelValue(row, id: id, column: c) { return n }
            return nil
        }
        for _ in 0..<plan.bins {
            b.send(.char("B"))
            guard let lo = numbers.min(), let hi = numbers.max() else {
                if b.state.message?.hasSuffix("holds no numbers here: B bins numbers") != true { return "B on no numbers said \(b.state.message ?? "nothing")" }
                b.send(.escape)
                return nil
            }
            let widths = ValueFrequencies.binWidths(for: Double(lo)...Double(hi))
            width = width.map { w in widths.first { $0 > w } } ?? widths.first
            if b.state.frequencySheet?.binWidth != width { return "B binned by \(b.state.frequencySheet?.binWidth.map(String.init) ?? "nothing"), the model by \(width.map(String.init) ?? "nothing")" }
        }
        let total = model.fetched.filter { model.rows[t][$0] != nil }.count
        var expected = expectedFrequencies(column: c, width: width, table: t, model: model)
        if let wrong = checkFrequencySheet(b, expected: expected, total: total, binned: width != nil) { return wrong }
        guard !expected.isEmpty else { b.send(.escape); return nil }
        // The values the edit acts on.
        var chosen: Set<ModelValue>?
        if let marked = plan.marked {
            var set = Set<Int>()
            for p in marked where p < expected.count {
                b.send([.char("g")] + Array(repeating: Key.char("j"), count: p) + [.char("v")])
                if set.contains(p) { set.remove(p) } else { set.insert(p) }
            }
            if set.isEmpty {
                let p = min(plan.cursor, expected.count - 1)
                b.send([.char("g")] + Array(repeating: Key.char("j"), count: p))
                set = [p]
            }
            chosen = Set(set.map { expected[$0].key })
        } else {
            b.send(.char("V"))
        }
        let target = model.fetched.filter { id in
            guard let row = model.rows[t][id], model.filters[t].matches(row) else { return false }
            return chosen.map { $0.contains(binned(ModelValue(row, id: id, column: c), width: width)) } ?? true
        }
        if let wrong = confirmEdit(update: plan.update, of: target, table: t, browser: b, model: &model) { return wrong }
        let said = (plan.update == nil ? "deleted " : "updated ") + rows(target.count)
        if b.state.message?.hasPrefix(said) != true { return "the message says \(b.state.message ?? "nothing"), the model \(said)" }
        // The table below is read again (its marks kept where their rows still are), then the sheet counted again.
        model.refetch(keepingMarks: true)
        // B's width stays; the numbers may have moved, but the sheet keeps the width it had.
        expected = expectedFrequencies(column: c, width: width, table: t, model: model)
        var counted = model.fetched.filter { model.rows[t][$0] != nil }.count
        if let wrong = checkFrequencySheet(b, expected: expected, total: counted, binned: width != nil) { return "after the edit: " + wrong }
        if plan.undo {
            b.send([.char("u"), .char("y")])
            model.undoLast()
            model.refetch(keepingMarks: true)
            expected = expectedFrequencies(column: c, width: width, table: t, model: model)
            counted = model.fetched.filter { model.rows[t][$0] != nil }.count
            if let wrong = checkFrequencySheet(b, expected: expected, total: counted, binned: width != nil) { return "after u: " + wrong }
        }
        b.send(.escape)
        if b.state.sheet != .table || b.state.sheetDepth != 0 { return "Esc did not go back to the table: \(b.state.sheetPath)" }
        return nil
    }

    /// `c`, the name's first letter (unique among id, k, s), Tab, Enter.
    static func jumpKeys(_ c: Int) -> [Key] {
        [.char("c"), .char(columns[c].first ?? "?"), .tab, .enter]
    }

    static func jumpText(_ c: Int) -> String { "c \(columns[c].prefix(1)) Tab Enter" }

    /// A column key: what the grid then shows against the model's arrangement.
    static func columnStep(_ op: ColumnOp, browser b: Browser, model: inout Model) -> String? {
        var view = model.view
        switch op {
        case .showAll:
            b.send(.char("+"))
            let lastFrozen = view.frozen > 0 ? view.shown[view.frozen - 1] : nil
            view.hidden = []
            view.frozen = lastFrozen.flatMap { view.shown.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
        case .hide(let c), .move(let c, _), .freeze(let c), .jump(let c):
            b.send(jumpKeys(c))
            view.unhide(c)
            if b.state.currentColumnName != columns[c] { return "c went to \(b.state.currentColumnName ?? "nothing"), not \(columns[c])" }
            guard let position = view.shown.firstIndex(of: c) else { return "the model lost column \(c)" }
            switch op {
            case .hide:
                b.send(.char("-"))
                if view.shown.count > 1 {
                    if position < view.frozen { view.frozen -= 1 }
                    view.hidden.insert(c)
                }
            case .move(_, let right):
                b.send(.char(right ? "L" : "H"))
                let to = position + (right ? 1 : -1)
                if to >= 0, to < view.shown.count, let i = view.order.firstIndex(of: c), let j = view.order.firstIndex(of: view.shown[to]) {
                    view.order.swapAt(i, j)
                }
            case .freeze:
                b.send(.char("!"))
                view.frozen = view.frozen == position + 1 ? 0 : position + 1
            default:
                break
            }
        }
        model.view = view
        return nil
    }

    /// The file, the result on screen and the marks against the model.
    static func check(_ b: Browser, _ model: Model, session: BrowserModelEngine.Session) throws -> String? {
        let file: [[Int64: ModelRow]] = try tables.map { name in try session.read(name).mapValues { ModelRow(k: $0.k, s: $0.s) } }
        for t in 0..<2 where file[t] != model.rows[t] {
            let wrong = Set(file[t].keys).symmetricDifference(model.rows[t].keys).sorted().prefix(5)
            return "the file's \(tables[t]) differs from the model (ids only on one side: \(Array(wrong)))"
        }
        guard let t = model.table else { return nil }
        let s = b.state
        guard s.table == tables[t] else { return "the browser shows \(s.table ?? "nothing"), the model \(tables[t])" }
        guard s.mode == .grid else { return "the browser is in \(s.mode), not the grid: \(s.message ?? "")" }
        if s.count != model.fetched.count { return "\(s.count) rows on screen, the model \(model.fetched.count)" }
        if s.allMarked != model.allMarked { return "all marked: browser \(s.allMarked), model \(model.allMarked)" }
        let marked = Set(s.marked.compactMap { $0.keyValues.first?.integerValue })
        if marked != model.marks { return "marked \(marked.sorted()), the model \(model.marks.sorted())" }
        let shown = model.view.shown.map { columns[$0] }
        if s.shownColumnNames != shown || s.columnView.frozen != model.view.frozen {
            return "columns \(s.shownColumnNames) (\(s.columnView.frozen) frozen), the model \(shown) (\(model.view.frozen) frozen)"
        }
        // The grid's header names the shown columns in the model's order.
        let header = render(s, colors: false).lines[0].split(separator: " ").map(String.init)
        if header != ["#"] + shown { return "the header is \(header), the model's columns \(shown)" }
        for (i, row) in s.window.enumerated() {
            let pos = s.windowStart + i
            guard let id = row.id, pos < model.fetched.count else { continue }
            guard let r = id.keyValues.first?.integerValue, r == model.fetched[pos] else { return "row \(pos + 1) is \(id), the model says id \(model.fetched[pos])" }
        }
        return nil
    }

    /// A shortest sequence that still fails: the failing prefix, then chunks removed while it
    /// still fails (delta debugging), down to single steps.
    static func shrink(_ steps: [Step], failure index: Int, engine: BrowserModelEngine) throws -> [Step] {
        var current = Array(steps.prefix(index + 1))
        var chunk = max(1, current.count / 2)
        while chunk >= 1 {
            var start = 0
            var removed = false
            while start < current.count {
                var candidate = current
                candidate.removeSubrange(start..<min(current.count, start + chunk))
                if !candidate.isEmpty, let f = try failure(candidate, engine: engine) {
                    current = Array(candidate.prefix(f.index + 1))
                    removed = true
                } else {
                    start += chunk
                }
            }
            if !removed { chunk /= 2 }
        }
        return current
    }
}
