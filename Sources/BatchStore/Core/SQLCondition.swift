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
    /// named `where` goes in backticks in NSPredicate's format: `` `where` == 1 ``.)
    public init(filter: String) throws {
        if let condition = Self.sqlCondition(ofFilter: filter) {
            try self.init(sql: condition, typedAfter: filter.count - condition.count)
        } else {
            try self.init(format: filter)
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
}
