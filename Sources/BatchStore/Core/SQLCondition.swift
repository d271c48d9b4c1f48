import Foundation

extension FetchPredicate {
    /// A condition in SQL, as a `WHERE` clause holds it, for a user who knows SQL rather than
    /// NSPredicate's format: `year >= 1990 AND title LIKE 'U%'`.
    ///
    /// The condition is checked before anything runs to be one expression that stays inside the
    /// parentheses it is compiled into: no `;`, no comment, no parameter, every string and quoted
    /// name closed, every parenthesis it opens closed, none closed that it did not open, and not a
    /// query. Names in it are the entity's columns, unqualified or qualified by `t`; a subquery
    /// may read other tables. SQLite's expressions only read; a name SQLite does not know is
    /// SQLite's error when the fetch runs.
    ///
    /// On a table with a key it compiles to a test of the key, so that it means the same in every
    /// statement the request runs in (a fetch, a search that joins the ID table, a batch update):
    /// `t."rowid" IN (SELECT t."rowid" FROM main."movie" AS t WHERE (<condition>))`; on a view or a
    /// query's result, to `(<condition>)`. Its ``format`` is `WHERE <condition>`, which
    /// ``init(filter:)`` reads back.
    ///
    /// Its semantics are SQL's, not NSPredicate's: `LIKE` takes `%` and `_` (ASCII case folded),
    /// `=` follows SQLite's type affinity, and a NULL operand makes a comparison unknown (a row
    /// is kept only where the whole condition is true). PostgreSQL stores refuse it (their
    /// functions may write; a read-only transaction for it is not built yet).
    /// - Throws: ``BatchStoreError`` `.invalidQuery` naming the first problem and its character.
    public init(sql condition: String) throws {
        try self.init(sql: condition, typedAfter: 0)
    }

    /// `condition`, which the user typed after `before` characters (`WHERE `): positions in
    /// errors count from the start of what they typed.
    init(sql condition: String, typedAfter before: Int) throws {
        let lead = condition.prefix { $0.isWhitespace }.count
        let trimmed = condition.trimmingCharacters(in: .whitespacesAndNewlines)
        try Self.checkCondition(trimmed, typedAfter: before + lead)
        self.init(node: .sql(trimmed), format: "WHERE " + trimmed)
    }

    /// A filter as a user types it: `WHERE <condition>` (any case) is ``init(sql:)``'s SQL
    /// condition; anything else is NSPredicate's format (``init(format:arguments:)``). (A column
    /// named `where` is written `#where` in NSPredicate's format, as any keyword used as a name.)
    public init(filter: String) throws {
        if let condition = Self.sqlCondition(ofFilter: filter) {
            try self.init(sql: condition, typedAfter: filter.count - condition.count)
            return
        }
        do {
            try self.init(format: filter)
        } catch let error as BatchStoreError where error.code == .syntax {
            // SQL typed without its WHERE (`year IS NULL`) fails here: say how SQL is written.
            throw BatchStoreError(.syntax, error.message + " (for SQL, start the filter with WHERE)", column: error.column)
        }
    }

    /// The SQL condition of a filter that is one (`WHERE year > 1990` → `year > 1990`); nil for a
    /// filter in NSPredicate's format.
    public static func sqlCondition(ofFilter filter: String) -> String? {
        let text = filter.drop { $0.isWhitespace }
        guard text.count >= 5, text.prefix(5).uppercased() == "WHERE" else { return nil }
        let rest = text.dropFirst(5)
        guard rest.isEmpty || rest.first?.isWhitespace == true else { return nil }
        return String(rest)
    }

    /// The checks of ``init(sql:)``, each failure one line naming what and where (characters
    /// counted from 1).
    static func checkCondition(_ condition: String, typedAfter before: Int = 0) throws {
        func fail(_ what: String, at byte: Int? = nil, in text: SQLText) -> BatchStoreError {
            let place = byte.map { " (character \(before + text.characterOffset(ofByte: $0) + 1))" } ?? ""
            return BatchStoreError(.invalidQuery, "the SQL condition \(what)\(place)")
        }
        let text = SQLText(condition)
        guard !text.bytes.contains(0) else { throw fail("holds a NUL byte", in: text) }
        guard let first = text.lexemes.first else {
            throw BatchStoreError(.invalidQuery, "the SQL condition is empty: write one after WHERE, as in WHERE year > 1990")
        }
        if first.kind == .word, ["SELECT", "WITH", "VALUES"].contains(text.text(of: first).uppercased()) {
            throw fail("is a query, not a condition: a query opens as a sheet of its own (:SELECT … in the browser, --query on the command line)", in: text)
        }
        if condition.lowercased().contains("pragma_optimize") {
            throw fail("reads pragma_optimize, which may write to the database (it runs ANALYZE)", in: text)
        }
        try checkDeterministic(text, fail: fail)
        var depth = 0
        var opened: [Int] = []
        for lexeme in text.lexemes {
            let at = lexeme.range.lowerBound
            switch lexeme.kind {
            case .comment:
                throw fail("holds a comment", at: at, in: text)
            case .parameter:
                throw fail("holds the parameter \(text.text(of: lexeme)): write the value itself", at: at, in: text)
            case .string where !lexeme.isClosed:
                throw fail("has a string that is not closed", at: at, in: text)
            case .quotedName where !lexeme.isClosed:
                throw fail("has a quoted name that is not closed", at: at, in: text)
            case .symbol:
                switch text.bytes[at] {
                case 0x3B:
                    throw fail("holds ; — one condition runs, no statement after it", at: at, in: text)
                case 0x28:
                    depth += 1
                    opened.append(at)
                case 0x29:
                    guard depth > 0 else { throw fail("closes a parenthesis it did not open", at: at, in: text) }
                    depth -= 1
                    opened.removeLast()
                default:
                    break
                }
            default:
                break
            }
        }
        if let open = opened.last { throw fail("leaves a parenthesis open", at: open, in: text) }
    }

    /// SQLite's functions whose answer changes from one run to the next.
    private static let changingFunctions: Set<String> = ["random", "randomblob", "changes", "total_changes", "last_insert_rowid"]
    /// Its date and time functions, which read the clock given `'now'` or no time at all.
    private static let clockFunctions: Set<String> = ["date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"]

    /// A condition must keep the same rows each time it runs: an edit runs it to count, to edit
    /// and to journal for undo, and a random choice made three times deletes one set of rows and
    /// journals another. Refuses SQLite's functions that answer differently each time (random(),
    /// changes() …) and the clock (`'now'`, `current_timestamp`, `date()` with no time).
    static func checkDeterministic(_ text: SQLText, fail: (String, Int?, SQLText) -> BatchStoreError) throws {
        let lexemes = text.lexemes
        // For each open parenthesis, whether it holds a date and time function's arguments.
        var clockArguments: [Bool] = []
        for (n, lexeme) in lexemes.enumerated() {
            let at = lexeme.range.lowerBound
            let next = n + 1 < lexemes.count ? text.text(of: lexemes[n + 1]) : ""
            if lexeme.kind == .symbol {
                let symbol = text.text(of: lexeme)
                if symbol == "(" {
                    let previous = n > 0 ? lexemes[n - 1] : nil
                    clockArguments.append(previous.map { [.word, .quotedName].contains($0.kind) && clockFunctions.contains(text.name(of: $0).lowercased()) } ?? false)
                } else if symbol == ")" {
                    _ = clockArguments.popLast()
                }
            }
            switch lexeme.kind {
            case .word, .quotedName:
                // A quoted name is called as the function it names: `"random"()`.
                let word = text.name(of: lexeme).lowercased()
                if changingFunctions.contains(word), next == "(" {
                    throw fail("calls \(word)(), which answers differently each time it runs; a filter runs again to count, to edit and to undo, so it must keep the same rows each time", at, text)
                }
                if lexeme.kind == .word, ["current_date", "current_time", "current_timestamp"].contains(word) {
                    throw fail("reads the clock (\(word)), which moves between the runs of a filter (to count, to edit, to undo); write the time itself, as in '2026-11-30 12:00:00'", at, text)
                }
                if clockFunctions.contains(word), next == "(", n + 2 < lexemes.count, text.text(of: lexemes[n + 2]) == ")" {
                    throw fail("reads the clock (\(word)() with no time), which moves between the runs of a filter (to count, to edit, to undo); write the time itself", at, text)
                }
            case .string where clockArguments.contains(true) && text.text(of: lexeme).lowercased() == "'now'":
                throw fail("reads the clock ('now'), which moves between the runs of a filter (to count, to edit, to undo); write the time itself, as in datetime('2026-11-30 12:00:00', '-1 day')", at, text)
            default:
                break
            }
        }
    }
}
