import BatchStore
import Foundation

/// The text functions NSPredicate's semantics need and PostgreSQL lacks, as SQL functions in the
/// session's own `pg_temp` schema (created once per session, gone with it; no extension, no
/// privilege beyond a temporary table's):
///
/// - `pg_temp.bs_fold_c(text)`, `bs_fold_d`, `bs_fold_cd`: `[c]`, `[d]` and `[cd]` folding, the
///   same as SQLite stores compute in Swift (`String.folding(options:locale: nil)`);
/// - `pg_temp.bs_lower(text)`, `bs_upper`: Unicode `lowercase()` and `uppercase()`, the same as
///   Swift's `lowercased()` and `uppercased()` (PostgreSQL's own follow the database's locale,
///   and under `C` change ASCII letters only).
///
/// Each is a table of what Swift gives for every code point of planes 0 and 1 (taken inside a
/// word), written as `translate()` (one-to-one and deleted code points) followed by a
/// `replace()` per code point that becomes several. Text that is all ASCII takes a shortcut, `lower(x COLLATE "C")` or the
/// text itself, which is what the table gives for ASCII. Each function is one SQL expression and
/// not STRICT, so the planner inlines it into the query.
enum PostgresTextFunctions {
    /// What one function does to each code point that it changes.
    struct Mapping: Equatable {
        /// Code points mapped to one code point: `translate(x, from, to)`.
        var from = ""
        var to = ""
        /// Code points removed (after `from` in translate's first string, with nothing in `to`).
        var deleted = ""
        /// Code points that become several, applied with `replace()` after translate.
        var expanded: [(String, String)] = []

        static func == (a: Mapping, b: Mapping) -> Bool {
            a.from == b.from && a.to == b.to && a.deleted == b.deleted && a.expanded.elementsEqual(b.expanded, by: ==)
        }
    }

    /// The functions, by name, with what Swift does to one code point for each.
    static let functions: [(name: String, map: @Sendable (String) -> String, ascii: String)] = [
        ("bs_fold_c", { SQLFunctions.fold($0, flags: 1) }, #"lower($1 COLLATE "C")"#),
        ("bs_fold_d", { SQLFunctions.fold($0, flags: 2) }, "$1"),
        ("bs_fold_cd", { SQLFunctions.fold($0, flags: 3) }, #"lower($1 COLLATE "C")"#),
        ("bs_lower", { $0.lowercased() }, #"lower($1 COLLATE "C")"#),
        ("bs_upper", { $0.uppercased() }, #"upper($1 COLLATE "C")"#),
    ]

    /// The mapping of every code point of planes 0 and 1 that `map` changes, each taken between
    /// two letters (`a` + code point + `a`), as it is met in text: a combining mark that folding
    /// removes after a letter is removed there (alone, Foundation keeps it), and a letter whose
    /// mapping depends on its place (a final sigma) maps as it does inside a word.
    static func mapping(_ map: (String) -> String) -> Mapping {
        var mapping = Mapping()
        let around = map("a")
        for value in UInt32(1)...0x1FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let original = String(String.UnicodeScalarView([scalar]))
            let inContext = Array(map("a" + original + "a").unicodeScalars)
            let edge = Array(around.unicodeScalars)
            let scalars: [Unicode.Scalar]
            if inContext.count >= 2 * edge.count, Array(inContext.prefix(edge.count)) == edge, Array(inContext.suffix(edge.count)) == edge {
                scalars = Array(inContext.dropFirst(edge.count).dropLast(edge.count))
            } else {
                scalars = Array(map(original).unicodeScalars)
            }
            guard scalars != [scalar] else { continue }
            switch scalars.count {
            case 0: mapping.deleted.unicodeScalars.append(scalar)
            case 1:
                mapping.from.unicodeScalars.append(scalar)
                mapping.to.unicodeScalars.append(scalars[0])
            default: mapping.expanded.append((original, String(String.UnicodeScalarView(scalars))))
            }
        }
        return mapping
    }

    /// Where Foundation's diacritic folding removes combining marks: after a character whose
    /// decomposition starts with a letter below U+0510 (Latin, Greek, Cyrillic), every mark it
    /// removes after `a` (`all`); after any other character (Hebrew, Devanagari, kana, Armenian),
    /// only some (`afterOthers`: those it removes after Armenian `Ա`); at the start of the text,
    /// none. `bases` are the characters of the first kind, found by folding each one followed
    /// by a Hebrew point (which only such a base loses).
    struct Marks {
        var all: [Unicode.Scalar] = []
        var afterOthers: [Unicode.Scalar] = []
        var bases: [Unicode.Scalar] = []
    }

    static func marks(_ map: (String) -> String) -> Marks {
        var marks = Marks()
        let probe: Unicode.Scalar = "\u{5B8}"
        let a = map("a"), armenian = map("\u{531}")
        for value in UInt32(1)...0x1FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let c = String(String.UnicodeScalarView([scalar]))
            if map("a" + c) == a, map(c) == c { marks.all.append(scalar) }
            if map("\u{531}" + c) == armenian, map(c) == c { marks.afterOthers.append(scalar) }
            if !map(c + String(probe)).unicodeScalars.contains(probe) { marks.bases.append(scalar) }
        }
        return marks
    }

    /// A regular-expression bracket of `scalars` (ascending), as ranges of `\uXXXX` / `\UXXXXXXXX`.
    static func bracket(_ scalars: [Unicode.Scalar]) -> String {
        func escape(_ v: UInt32) -> String { v <= 0xFFFF ? String(format: "\\u%04X", v) : String(format: "\\U%08X", v) }
        var parts: [String] = []
        var i = 0
        while i < scalars.count {
            var j = i
            while j + 1 < scalars.count, scalars[j + 1].value == scalars[j].value + 1 { j += 1 }
            parts.append(i == j ? escape(scalars[i].value) : escape(scalars[i].value) + "-" + escape(scalars[j].value))
            i = j + 1
        }
        return "[" + parts.joined() + "]"
    }

    /// `CREATE OR REPLACE FUNCTION pg_temp.…` for each function; computed once per process, the
    /// first time a fetch needs them (about 130,000 code points through Foundation). For the
    /// diacritic folds, marks are removed first where Foundation removes them (see ``Marks``),
    /// then the table is applied. Not STRICT, so that the planner inlines each call.
    ///
    /// Computing them costs about 2.5 s of CPU, so they are computed here once, by the test that
    /// writes them to `PostgresTextFunctions+Tables.swift` (``tableStatements``) and checks on every run
    /// that this machine's Foundation still gives exactly those; a session installs the
    /// written ones (the first `[c]` predicate of a process cost 2.5–3.1 s of client CPU).
    package static func computeStatements() -> [String] { functions.map { function in
        let m = mapping(function.map)
        var input = "$1"
        if !m.deleted.isEmpty {
            let marks = marks(function.map)
            let afterBase = "regexp_replace($1, \(quoteLiteral("(" + bracket(marks.bases) + ")" + bracket(marks.all) + "+")), '\\1', 'g')"
            input = marks.afterOthers.isEmpty ? afterBase
                : "(left(\(afterBase), 1) || regexp_replace(substr(\(afterBase), 2), \(quoteLiteral(bracket(marks.afterOthers) + "+")), '', 'g'))"
        }
        var body = "translate(\(input), \(quoteLiteral(m.from)), \(quoteLiteral(m.to)))"
        for (from, to) in m.expanded { body = "replace(\(body), \(quoteLiteral(from)), \(quoteLiteral(to)))" }
        return """
            CREATE OR REPLACE FUNCTION pg_temp.\(function.name)(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $bs$
            SELECT CASE WHEN octet_length($1) = char_length($1) THEN \(function.ascii) ELSE \(body) END
            $bs$
            """
    } }

    /// The statements that create the functions: ``computeStatements()`` as written down.
    static var createStatements: [String] { tableStatements }

    /// Creates the functions in `session`'s `pg_temp` schema (one statement each).
    /// True when `sql` calls one of the functions (and so needs ``install(in:)`` first).
    static func areUsed(in sql: String) -> Bool {
        functions.contains { sql.contains("pg_temp.\($0.name)(") }
    }

    static func install(in session: PostgresSession) throws {
        for statement in createStatements { try session.execute(statement) }
    }
}
