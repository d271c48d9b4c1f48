import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server of the test process's own: `initdb` into a temporary folder, `postgres`
/// listening only on a Unix socket in that folder (`listen_addresses = ''`, no TCP), one per test
/// process, started by the first test that asks (``PostgresServer/require()``) and shared by
/// every suite after it. The TLS tests start a second one (``requireTLS()``) that also listens
/// on `127.0.0.1`, since PostgreSQL has no TLS over a Unix socket.
///
/// - Binaries: `FAULTLINE_PG_BINDIR`, else Debian's `/usr/lib/postgresql/15/bin`, else the newest
///   `/usr/lib/postgresql/*/bin`, else `initdb` on `PATH`.
/// - Root: `initdb` and `postgres` refuse to run as root, so as root they run as the `postgres`
///   user (which Debian's package creates), else `nobody`, through `setpriv` (util-linux: it
///   execs, so the pid is the server's), in a folder under `/tmp` made for and owned by that user.
///   As any other user they run as that user, in its temporary folder.
/// - Roles: the superuser `faultline` connects without a password (`trust`); every other role
///   needs its password (`scram-sha-256`), so authentication is real.
/// - The end: the server is stopped (fast shutdown) and its folder removed when the test process
///   exits, failed tests or not (`atexit`); should the process die without exiting (a crash,
///   SIGKILL, a signal to its whole process group), a watchdog in a session of its own, blocked
///   reading a FIFO that only the test process holds open, stops the server and removes the folder
///   when the kernel closes the test process's end.
/// - When PostgreSQL is missing or does not start, ``require()`` cancels the calling test with one
///   line saying why, so it is reported as skipped and the rest of the suite runs.
public final class PostgresServer: Sendable {
    /// The folder that holds the data directory, the logs and the socket.
    public let folder: String
    /// The port: here only the number in the socket file's name.
    public let port: Int
    /// The superuser, which connects without a password.
    public let superuser = "faultline"
    /// The folder of `initdb`, `postgres` and `psql`.
    public let binDirectory: String
    /// The server's pid.
    public let pid: pid_t
    /// Who the server runs as (`postgres` when the tests run as root, else the current user).
    public let osUser: String

    /// The shared server, or why there is none. Started on first use.
    public static let shared: Result<PostgresServer, Unavailable> = {
        let started = start(tls: false)
        if case .success = started { atexit { PostgresServer.stop(PostgresServer.shared) } }
        return started
    }()

    /// A second server for the TLS tests, started by the first that asks (``requireTLS()``): the
    /// same as ``shared``, and also listening on `127.0.0.1` (a free port) with TLS on, a
    /// self-signed certificate for `localhost` and `127.0.0.1` made by `openssl`, and a
    /// `pg_hba.conf` that lets the superuser in over TCP with TLS only (`hostssl … trust`,
    /// `hostnossl … reject`). TLS needs TCP: PostgreSQL has none over a Unix socket.
    public static let sharedTLS: Result<PostgresServer, Unavailable> = {
        let started = start(tls: true)
        if case .success = started { atexit { PostgresServer.stop(PostgresServer.sharedTLS) } }
        return started
    }()

    /// A new server, or why there is none.
    private static func start(tls: Bool) -> Result<PostgresServer, Unavailable> {
        do {
            return .success(try PostgresServer(tls: tls))
        } catch let error as Unavailable {
            return .failure(error)
        } catch {
            return .failure(Unavailable(reason: "\(error)"))
        }
    }

    /// The TLS server; when there is none, cancels the running test (reported as skipped).
    public static func requireTLS() throws -> PostgresServer {
        switch sharedTLS {
        case .success(let server): return server
        case .failure(let error): try Test.cancel(Comment(rawValue: "PostgreSQL TLS tests skipped: \(error.reason)"))
        }
    }

    /// The TLS server's certificate (PEM), to trust with `sslrootcert`.
    public var certificatePath: String { "\(folder)/server.crt" }

    /// `postgresql://faultline@127.0.0.1:<port>/<database>?sslmode=<mode>` and its other parameters.
    public func tcpURL(database: String, sslmode: String?, parameters: String = "") -> String {
        let query = ([sslmode.map { "sslmode=\($0)" }].compactMap { $0 } + (parameters.isEmpty ? [] : [parameters])).joined(separator: "&")
        return "postgresql://\(superuser)@127.0.0.1:\(port)/\(database)" + (query.isEmpty ? "" : "?" + query)
    }

    /// Why PostgreSQL tests cannot run here.
    public struct Unavailable: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// The shared server; when there is none, cancels the running test (reported as skipped) with
    /// `PostgreSQL tests skipped: <why>`.
    public static func require() throws -> PostgresServer {
        switch shared {
        case .success(let server): return server
        case .failure(let error): try Test.cancel(Comment(rawValue: "PostgreSQL tests skipped: \(error.reason)"))
        }
    }

    /// The socket file's path.
    public var socketPath: String { "\(folder)/.s.PGSQL.\(port)" }

    /// `postgresql://user[:password]@/database?host=<folder>&port=<port>`, user and password percent-encoded.
    public func url(database: String, user: String? = nil, password: String? = nil) -> String {
        let keep = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        func encode(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: keep) ?? s }
        let credentials = encode(user ?? superuser) + (password.map { ":" + encode($0) } ?? "")
        return "postgresql://\(credentials)@/\(encode(database))?host=\(encode(folder).replacingOccurrences(of: "%2F", with: "/"))&port=\(port)"
    }

    /// Runs `sql` with `psql` as the superuser (or `user`) on `database`; stops at the first
    /// error. Returns the rows unaligned, `|` between fields, one per line.
    /// - Throws: when psql fails, with its error output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres", user: String? = nil) throws -> String {
        let dir = TempDir(prefix: "faultline-psql")
        let script = dir.path("script.sql")
        try Data(sql.utf8).write(to: URL(fileURLWithPath: script))
        let result = try runProcess([binDirectory + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                                     "-h", folder, "-p", String(port), "-U", user ?? superuser, "-d", database, "-f", script],
                                    environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"])
        guard result.status == 0 else {
            throw Unavailable(reason: "psql failed (\(result.status)): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return result.stdout.trimmingCharacters(in: .newlines)
    }

    /// Creates an empty database with a name no other test uses (`t_<prefix>_<random>`), and runs `sql` in it.
    public func makeDatabase(_ prefix: String = "db", sql: String? = nil) throws -> String {
        let name = "t_\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        try psql("CREATE DATABASE \(name)")
        if let sql { try psql(sql, database: name) }
        return name
    }

    /// A role name no other test uses (`r_<prefix>_<random>`).
    public func uniqueRoleName(_ prefix: String) -> String { "r_\(prefix)_\(UUID().uuidString.prefix(8).lowercased())" }

    // MARK: - Starting and stopping

    private let lifeline: Int32

    private init(tls: Bool) throws {
        binDirectory = try Self.findBinaries()
        let asRoot = geteuid() == 0
        var prefix: [String] = []
        var owner: (uid: uid_t, gid: gid_t)?
        if asRoot {
            var found: (String, uid_t, gid_t)?
            for name in ["postgres", "nobody"] where found == nil {
                if let entry = getpwnam(name) { found = (name, entry.pointee.pw_uid, entry.pointee.pw_gid) }
            }
            guard let account = found else {
                throw Unavailable(reason: "running as root, and there is no postgres or nobody user to run the server as")
            }
            guard let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
                throw Unavailable(reason: "running as root, and setpriv (util-linux) is missing to run the server as \(account.0)")
            }
            osUser = account.0
            owner = (account.1, account.2)
            prefix = [setpriv, "--reuid=\(account.1)", "--regid=\(account.2)", "--clear-groups", "--"]
        } else {
            osUser = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(geteuid())"
        }
        // As root, /tmp: the server's user must reach the folder, and a TMPDIR under /root would
        // not let it. A socket path must also stay under 108 bytes.
        var base = asRoot ? "/tmp" : FileManager.default.temporaryDirectory.path
        if base.utf8.count > 60 { base = "/tmp" }
        let folder = "\(base)/faultline-pg-\(UUID().uuidString.prefix(8).lowercased())"
        self.folder = folder
        port = tls ? try Self.freeTCPPort() : 5432
        guard mkdir(folder, 0o700) == 0 else {
            throw Unavailable(reason: "cannot create \(folder): \(String(cString: strerror(errno)))")
        }
        var cleanup = true
        defer { if cleanup { try? FileManager.default.removeItem(atPath: folder) } }
        if let owner, chown(folder, owner.uid, owner.gid) != 0 {
            throw Unavailable(reason: "cannot give \(folder) to \(osUser): \(String(cString: strerror(errno)))")
        }
        let environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C", "TZ": "UTC"]
        let data = "\(folder)/data"

        let initdb = try Subprocess(prefix + ["\(binDirectory)/initdb", "-D", data, "-U", superuser, "-A", "trust", "-E", "UTF8",
                                              "--locale=C", "--no-sync", "--no-instructions"],
                                    environment: environment, stdout: .file("\(folder)/initdb.log"), stderr: .file("\(folder)/initdb.log"))
        guard initdb.wait() == 0 else {
            throw Unavailable(reason: "initdb failed: \(Self.lastLine(of: "\(folder)/initdb.log"))")
        }
        // The superuser by trust, every other role by its password; over TCP, TLS only.
        var hba = "local all \(superuser) trust\nlocal all all scram-sha-256\n"
        var listen = ["-c", "listen_addresses="]
        if tls {
            hba += "hostssl all \(superuser) 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n"
            let key = "\(folder)/server.key", certificate = "\(folder)/server.crt"
            guard let opensslPath = ["/usr/bin/openssl", "/bin/openssl"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
                throw Unavailable(reason: "openssl is missing to make the server's certificate (apt-get install openssl)")
            }
            let openssl = try Subprocess([opensslPath, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                                          "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", certificate],
                                         environment: environment, stdout: .file("\(folder)/openssl.log"), stderr: .file("\(folder)/openssl.log"))
            guard openssl.wait() == 0 else { throw Unavailable(reason: "openssl could not make a certificate: \(Self.lastLine(of: "\(folder)/openssl.log"))") }
            chmod(key, 0o600)
            if let owner { _ = chown(key, owner.uid, owner.gid); _ = chown(certificate, owner.uid, owner.gid) }
            listen = ["-c", "listen_addresses=127.0.0.1", "-c", "ssl=on", "-c", "ssl_cert_file=\(certificate)", "-c", "ssl_key_file=\(key)"]
        }
        try Data(hba.utf8).write(to: URL(fileURLWithPath: "\(data)/pg_hba.conf"))

        let server = try Subprocess(prefix + ["\(binDirectory)/postgres", "-D", data, "-p", String(port)] + listen + [
                                              "-c", "unix_socket_directories=\(folder)",
                                              "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                                              "-c", "max_connections=60", "-c", "shared_buffers=32MB",
                                              "-c", "password_encryption=scram-sha-256"],
                                    environment: environment, stdout: .file("\(folder)/postgres.log"), stderr: .file("\(folder)/postgres.log"))
        pid = server.pid
        // The watchdog: when this process's end of the FIFO closes (exit or death), stop the server
        // and remove the folder.
        let fifo = "\(folder)/lifeline"
        guard mkfifo(fifo, 0o600) == 0 else { server.signal(SIGKILL); throw Unavailable(reason: "cannot create a FIFO in \(folder)") }
        lifeline = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard lifeline >= 0 else { server.signal(SIGKILL); throw Unavailable(reason: "cannot open the FIFO in \(folder)") }
        let script = """
            cat \(shellQuote(fifo)) >/dev/null; kill -INT \(pid) 2>/dev/null; i=0
            while kill -0 \(pid) 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
            kill -KILL \(pid) 2>/dev/null; rm -rf \(shellQuote(folder))
            """
        // In a session of its own (setsid), so that a signal to the test's whole process group
        // (GNU timeout's, a terminal's Ctrl-C) cannot end it before it has cleaned up.
        let setsid = ["/usr/bin/setsid", "/bin/setsid"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let watchdogProcess = try Subprocess((setsid.map { [$0] } ?? []) + ["/bin/sh", "-c", script], environment: environment)

        // Ready when postmaster.pid's status line says so (what pg_ctl waits for).
        let deadline = Date().addingTimeInterval(60)
        while true {
            if let pidFile = try? String(contentsOfFile: "\(data)/postmaster.pid", encoding: .utf8) {
                let lines = pidFile.split(separator: "\n", omittingEmptySubsequences: false)
                if lines.count > 7, lines[7].trimmingCharacters(in: .whitespaces) == "ready" { break }
            }
            if let status = server.status() {
                Self.closeLifeline(lifeline)
                throw Unavailable(reason: "postgres exited (\(status)) at start: \(Self.lastLine(of: "\(folder)/postgres.log"))")
            }
            if Date() > deadline {
                server.signal(SIGKILL)
                Self.closeLifeline(lifeline)
                throw Unavailable(reason: "postgres did not become ready in 60 s: \(Self.lastLine(of: "\(folder)/postgres.log"))")
            }
            usleep(20_000)
        }
        cleanup = false
        // Keep the Subprocess objects from killing their children when they go away: the server
        // and the watchdog live until the process exits.
        Self.keep(server)
        Self.keep(watchdogProcess)
    }

    nonisolated(unsafe) private static var kept: [Subprocess] = []
    private static func keep(_ process: Subprocess) { kept.append(process) }

    private static func closeLifeline(_ fd: Int32) { if fd >= 0 { Glibc.close(fd) } }

    /// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick).
    private static func freeTCPPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unavailable(reason: "cannot open a TCP socket") }
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Unavailable(reason: "cannot bind a TCP port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Fast shutdown (SIGINT), wait up to ten seconds (then SIGKILL), remove the folder.
    private static func stop(_ started: Result<PostgresServer, Unavailable>) {
        guard case .success(let server) = started else { return }
        kill(server.pid, SIGINT)
        let deadline = Date().addingTimeInterval(10)
        var status: Int32 = 0
        while waitpid(server.pid, &status, WNOHANG) == 0 {
            if Date() > deadline { kill(server.pid, SIGKILL); waitpid(server.pid, &status, 0); break }
            usleep(20_000)
        }
        try? FileManager.default.removeItem(atPath: server.folder)
        closeLifeline(server.lifeline)
    }

    /// Where `initdb` and `postgres` are.
    private static func findBinaries() throws -> String {
        let fm = FileManager.default
        func hasServer(_ dir: String) -> Bool {
            fm.isExecutableFile(atPath: dir + "/initdb") && fm.isExecutableFile(atPath: dir + "/postgres")
        }
        if let dir = ProcessInfo.processInfo.environment["FAULTLINE_PG_BINDIR"], !dir.isEmpty {
            guard hasServer(dir) else { throw Unavailable(reason: "FAULTLINE_PG_BINDIR=\(dir) has no initdb and postgres") }
            return dir
        }
        if hasServer("/usr/lib/postgresql/15/bin") { return "/usr/lib/postgresql/15/bin" }
        let versions = ((try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap(Int.init).sorted(by: >)
        if let dir = versions.map({ "/usr/lib/postgresql/\($0)/bin" }).first(where: hasServer) { return dir }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) where hasServer(dir) {
            return dir
        }
        throw Unavailable(reason: "no PostgreSQL server found (initdb and postgres): install Debian's postgresql-15 (make deps does), or set FAULTLINE_PG_BINDIR")
    }

    /// The last non-empty line of a log, for a one-line reason.
    private static func lastLine(of path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").last.map(String.init) ?? "(no output)"
    }
}
