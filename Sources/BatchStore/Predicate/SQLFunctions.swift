import Foundation
import GRDB

/// SQL functions every BatchStore connection registers, for the predicate operators SQLite lacks.
///
/// - `bs_fold(text, flags)`: case (flags & 1) and diacritic (flags & 2) folding, for `[c]`, `[d]`, `[cd]`.
/// - `bs_matches(text, pattern, flags)`: 1 when the whole text matches the regular expression
///   (NSPredicate's MATCHES), with the same folding flags.
enum SQLFunctions {
    static func fold(_ s: String, flags: Int) -> String {
        var options: String.CompareOptions = []
        if flags & 1 != 0 { options.insert(.caseInsensitive) }
        if flags & 2 != 0 { options.insert(.diacriticInsensitive) }
        if options.isEmpty { return s }
        return s.folding(options: options, locale: nil)
    }

    static let foldFunction = DatabaseFunction("bs_fold", argumentCount: 2, pure: true) { values in
        guard let s = String.fromDatabaseValue(values[0]) else { return values[0].isNull ? nil : values[0] }
        return fold(s, flags: Int.fromDatabaseValue(values[1]) ?? 0)
    }

    static let matchesFunction = DatabaseFunction("bs_matches", argumentCount: 3, pure: true) { values in
        guard let s = String.fromDatabaseValue(values[0]), let pattern = String.fromDatabaseValue(values[1]) else { return nil }
        let flags = Int.fromDatabaseValue(values[2]) ?? 0
        guard let regex = RegexCache.shared.regex(pattern, flags: flags) else { return false }
        let subject = flags & 2 != 0 ? fold(s, flags: 2) : s
        let range = NSRange(subject.startIndex..., in: subject)
        guard let m = regex.firstMatch(in: subject, options: [.anchored], range: range) else { return false }
        return m.range.location == 0 && m.range.length == range.length
    }

    static func register(in db: Database) {
        db.add(function: foldFunction)
        db.add(function: matchesFunction)
        db.add(function: caseFunction)
    }

    /// Compiles a MATCHES pattern, or returns a message naming what is wrong with it.
    static func validateRegex(_ pattern: String) -> String? {
        do {
            _ = try NSRegularExpression(pattern: pattern)
            return nil
        } catch {
            return "invalid regular expression \(pattern.debugDescription)"
        }
    }
}

/// A small cache of compiled regular expressions, shared by all connections.
final class RegexCache: @unchecked Sendable {
    static let shared = RegexCache()
    private let lock = NSLock()
    private var cache: [String: NSRegularExpression] = [:]

    func regex(_ pattern: String, flags: Int) -> NSRegularExpression? {
        let key = "\(flags):\(pattern)"
        lock.lock()
        defer { lock.unlock() }
        if let r = cache[key] { return r }
        var options: NSRegularExpression.Options = []
        if flags & 1 != 0 { options.insert(.caseInsensitive) }
        let p = flags & 2 != 0 ? SQLFunctions.fold(pattern, flags: 2) : pattern
        guard let r = try? NSRegularExpression(pattern: p, options: options) else { return nil }
        if cache.count > 64 { cache.removeAll() }
        cache[key] = r
        return r
    }
}

extension SQLFunctions {
    /// `bs_case(text, upper)`: Unicode-correct lower (0) or upper (1) case; SQLite's own is ASCII only.
    static let caseFunction = DatabaseFunction("bs_case", argumentCount: 2, pure: true) { values in
        guard let s = String.fromDatabaseValue(values[0]) else { return values[0] }
        return (Int.fromDatabaseValue(values[1]) ?? 0) == 1 ? s.uppercased() : s.lowercased()
    }
}
