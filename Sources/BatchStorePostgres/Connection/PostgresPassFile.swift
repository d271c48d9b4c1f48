import BatchStore
import Foundation

/// libpq's password file (`~/.pgpass`, or the file `PGPASSFILE` names), read by libpq's rules.
///
/// Each line is `hostname:port:database:username:password`; `#` starts a comment line; `*` as a
/// whole field matches anything; `\:` and `\\` stand for `:` and `\`; the first matching line wins.
/// A Unix socket connection matches the host `localhost` when its folder is the default socket
/// folder, else the folder's path. The file is ignored, as libpq ignores it, when it is not a plain
/// file or when its group or others have any permission (it must be `0600` or less).
public enum PostgresPassFile {
    /// What looking in the file found.
    public enum Lookup: Sendable, Equatable {
        /// A line matched: its password.
        case found(PostgresPassword)
        /// The file is readable and trusted, but no line matches.
        case noMatch
        /// There is no such file (or it cannot be read).
        case missing
        /// The file exists but is not used, with libpq's reason (`has group or world access;
        /// permissions should be u=rw (0600) or less`).
        case ignored(String)
    }

    /// Where libpq looks: `PGPASSFILE`, else `.pgpass` in `HOME`, else in the user's home folder.
    public static func path(environment: [String: String]) -> String? {
        if let file = environment["PGPASSFILE"], !file.isEmpty { return file }
        if let home = environment["HOME"], !home.isEmpty { return (home as NSString).appendingPathComponent(".pgpass") }
        guard let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir else { return nil }
        return (String(cString: dir) as NSString).appendingPathComponent(".pgpass")
    }

    /// The host name a connection matches lines with: `localhost` for the default socket folder
    /// (as libpq), the folder's path for another socket folder, the host name for TCP.
    static func hostField(for endpoint: PostgresStoreURL.Endpoint) -> String {
        switch endpoint {
        case .tcp(let host, _): return host
        case .unixSocket(let directory, _):
            return directory == PostgresStoreURL.defaultSocketDirectory ? "localhost" : directory
        }
    }

    /// Looks up the password for `url`'s host, port, database and user in the file at `path`.
    ///
    /// - Complexity: O(size of the file).
    public static func lookup(_ url: PostgresStoreURL, path: String) -> Lookup {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        guard info.st_mode & S_IFMT == S_IFREG else { return .ignored("is not a plain file") }
        guard info.st_mode & (S_IRWXG | S_IRWXO) == 0 else {
            return .ignored("has group or world access; permissions should be u=rw (0600) or less")
        }
        guard let data = FileManager.default.contents(atPath: path) else { return .missing }
        let fields = [hostField(for: url.endpoint), String(url.endpoint.port), url.database, url.user]
        for rawLine in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true) {
            var line = Substring(rawLine)
            if line.hasSuffix("\r") { line = line.dropLast() }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if let password = match(line, fields) { return .found(PostgresPassword(password)) }
        }
        return .noMatch
    }

    /// The password of `line` when its first four fields match `fields`, else nil (libpq's
    /// `pwdfMatchesString` field by field, then the password up to an unescaped `:`).
    static func match(_ line: Substring, _ fields: [String]) -> String? {
        var rest = line
        for token in fields {
            guard let after = matchField(rest, token) else { return nil }
            rest = after
        }
        var password = ""
        var escaped = false
        for c in rest {
            if escaped {
                password.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == ":" {
                break
            } else {
                password.append(c)
            }
        }
        if escaped { password.append("\\") }
        return password
    }

    /// The rest of `text` after its first field when that field is `*` or equals `token`
    /// (with `\` escaping the next character), else nil.
    static func matchField(_ text: Substring, _ token: String) -> Substring? {
        if text.hasPrefix("*:") { return text.dropFirst(2) }
        var tokenRest = Substring(token)
        var index = text.startIndex
        while index < text.endIndex {
            var c = text[index]
            var escaped = false
            if c == "\\" {
                let next = text.index(after: index)
                guard next < text.endIndex else { return nil }
                index = next
                c = text[index]
                escaped = true
            }
            if c == ":" && !escaped {
                return tokenRest.isEmpty ? text[text.index(after: index)...] : nil
            }
            guard let t = tokenRest.first, t == c else { return nil }
            tokenRest = tokenRest.dropFirst()
            index = text.index(after: index)
        }
        return nil
    }
}

/// Where a connection's password came from.
public enum PostgresPasswordSource: Sendable, Equatable {
    /// Written in the store URL.
    case url
    /// The `PGPASSWORD` environment variable.
    case environment
    /// A line of the password file at this path.
    case passFile(String)
    /// None was found: the server may not ask for one.
    case none
}

extension PostgresStoreURL {
    /// The password to send, as libpq picks it: the URL's, else `PGPASSWORD`, else the first
    /// matching line of the password file. `note` says why a password file was passed over
    /// (for the message when authentication then fails); nil otherwise.
    public func resolvePassword(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> (password: PostgresPassword?, source: PostgresPasswordSource, note: String?) {
        if let password { return (password, .url, nil) }
        if let text = environment["PGPASSWORD"], !text.isEmpty { return (PostgresPassword(text), .environment, nil) }
        guard let path = PostgresPassFile.path(environment: environment) else { return (nil, .none, nil) }
        switch PostgresPassFile.lookup(self, path: path) {
        case .found(let password): return (password, .passFile(path), nil)
        case .noMatch, .missing: return (nil, .none, nil)
        case .ignored(let reason): return (nil, .none, "password file \(path) ignored: it \(reason)")
        }
    }
}
