import BatchStore
import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// `~/.pgpass` by libpq's rules: fields, wildcards, escapes, first match, the 0600 rule, precedence.
@Suite("PostgreSQL password file", .tags(.postgres), .timeLimit(slowTestLimit))
struct PassFileTests {
    /// Writes `text` to a file in `dir` with `mode` and returns its path.
    func passFile(_ dir: TempDir, _ text: String, mode: mode_t = 0o600) throws -> String {
        let path = dir.path("pgpass")
        unlink(path)  // a read-only file from the last call cannot be rewritten unless root
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, mode) == 0)
        return path
    }

    func url(_ text: String) throws -> PostgresStoreURL { try PostgresStoreURL(text, environment: ["PGUSER": "nobody-in-particular"]) }

    func found(_ lookup: PostgresPassFile.Lookup) -> String? {
        if case .found(let password) = lookup { return password.text }
        return nil
    }

    @Test("host, port, database and user must all match; * matches anything; the first matching line wins")
    func matching() throws {
        let dir = TempDir()
        let path = try passFile(dir, """
            # comment: db.example.com:5432:shop:alice:commented
            db.example.com:5432:shop:alice:first
            db.example.com:5432:shop:alice:second
            db.example.com:*:*:bob:bobs
            *:6000:*:*:any-on-6000
            other:5432:shop:alice:other-host\r
            """)
        #expect(found(PostgresPassFile.lookup(try url("postgres://alice@db.example.com/shop"), path: path)) == "first")
        #expect(found(PostgresPassFile.lookup(try url("postgres://bob@db.example.com:7777/x"), path: path)) == "bobs")
        #expect(found(PostgresPassFile.lookup(try url("postgres://zed@elsewhere:6000/y"), path: path)) == "any-on-6000")
        #expect(found(PostgresPassFile.lookup(try url("postgres://alice@other/shop"), path: path)) == "other-host", "CRLF line ends")
        #expect(PostgresPassFile.lookup(try url("postgres://alice@db.example.com/stock"), path: path) == .noMatch)
        #expect(PostgresPassFile.lookup(try url("postgres://alice@db.example.com:5433/shop"), path: path) == .noMatch)
        #expect(PostgresPassFile.lookup(try url("postgres://alice@db.example.com/shop"), path: dir.path("absent")) == .missing)
    }

    @Test("\\: and \\\\ in fields and passwords; the password ends at an unescaped colon")
    func escapes() throws {
        let dir = TempDir()
        let path = try passFile(dir, #"""
            h:5432:we\:ird:u:pa\:ss\\word:ignored
            h:5432:back\\slash:u:x\y
            h:5432:*:u:tail\
            """#)
        #expect(found(PostgresPassFile.lookup(try url("postgres://u@h/we%3Aird"), path: path)) == #"pa:ss\word"#)
        #expect(found(PostgresPassFile.lookup(try url(#"postgres://u@h/back%5Cslash"#), path: path)) == "xy")
        #expect(found(PostgresPassFile.lookup(try url("postgres://u@h/other"), path: path)) == #"tail\"#)
        // A literal "*" is only a wildcard as a whole field.
        let star = try passFile(dir, "h:5432:*x:u:starred\n")
        #expect(PostgresPassFile.lookup(try url("postgres://u@h/abc"), path: star) == .noMatch)
        #expect(found(PostgresPassFile.lookup(try url("postgres://u@h/*x"), path: star)) == "starred")
    }

    @Test("a socket in the default folder matches localhost; another folder matches its own path")
    func socketHosts() throws {
        let dir = TempDir()
        let path = try passFile(dir, """
            localhost:5432:db:u:local
            /srv/pg:5433:db:u:srv
            """)
        #expect(found(PostgresPassFile.lookup(try url("postgresql://u@/db"), path: path)) == "local")
        #expect(found(PostgresPassFile.lookup(try url("postgresql://u@localhost/db"), path: path)) == "local")
        #expect(found(PostgresPassFile.lookup(try url("postgresql://u@/db?host=/srv/pg&port=5433"), path: path)) == "srv")
        #expect(PostgresPassFile.lookup(try url("postgresql://u@/db?host=/srv/pg"), path: path) == .noMatch)
    }

    @Test("a file that group or others may access, or that is not a plain file, is ignored with libpq's reason")
    func permissions() throws {
        let dir = TempDir()
        let line = "*:*:*:*:pw\n"
        let target = try url("postgres://u@h/d")
        for mode: mode_t in [0o600, 0o400, 0o700] {
            #expect(found(PostgresPassFile.lookup(target, path: try passFile(dir, line, mode: mode))) == "pw", "mode \(String(mode, radix: 8))")
        }
        for mode: mode_t in [0o640, 0o604, 0o644, 0o660, 0o601] {
            #expect(PostgresPassFile.lookup(target, path: try passFile(dir, line, mode: mode))
                    == .ignored("has group or world access; permissions should be u=rw (0600) or less"), "mode \(String(mode, radix: 8))")
        }
        #expect(PostgresPassFile.lookup(target, path: dir.url.path) == .ignored("is not a plain file"))
    }

    @Test("the password comes from the URL, else PGPASSWORD, else the file PGPASSFILE or HOME names")
    func precedence() throws {
        let dir = TempDir()
        let file = try passFile(dir, "*:*:*:*:from-file\n")
        let home = TempDir()
        try Data("*:*:*:*:from-home\n".utf8).write(to: home.url.appendingPathComponent(".pgpass"))
        #expect(chmod(home.path(".pgpass"), 0o600) == 0)
        let withPassword = try url("postgres://u:from-url@h/d")
        let without = try url("postgres://u@h/d")
        let all = ["PGPASSWORD": "from-env", "PGPASSFILE": file, "HOME": home.url.path]

        var resolved = withPassword.resolvePassword(environment: all)
        #expect(resolved.password?.text == "from-url" && resolved.source == .url)
        resolved = without.resolvePassword(environment: all)
        #expect(resolved.password?.text == "from-env" && resolved.source == .environment)
        resolved = without.resolvePassword(environment: ["PGPASSFILE": file, "HOME": home.url.path])
        #expect(resolved.password?.text == "from-file" && resolved.source == .passFile(file))
        resolved = without.resolvePassword(environment: ["HOME": home.url.path])
        #expect(resolved.password?.text == "from-home" && resolved.source == .passFile(home.path(".pgpass")))
        resolved = without.resolvePassword(environment: ["PGPASSFILE": dir.path("none")])
        #expect(resolved.password == nil && resolved.source == PostgresPasswordSource.none && resolved.note == nil)

        #expect(chmod(file, 0o644) == 0)
        resolved = without.resolvePassword(environment: ["PGPASSFILE": file])
        #expect(resolved.password == nil)
        #expect(resolved.note == "password file \(file) ignored: it has group or world access; permissions should be u=rw (0600) or less")
    }
}
