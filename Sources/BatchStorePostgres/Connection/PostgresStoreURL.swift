import BatchStore
import Foundation

/// A password, kept out of every description: `description`, `debugDescription` and `dump` show `***`.
public struct PostgresPassword: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The password itself, for the connection (and the tests); never formatted.
    package let text: String

    package init(_ text: String) { self.text = text }

    public var description: String { "***" }
    public var debugDescription: String { "***" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// Where and how to reach a PostgreSQL database: a store URL read as libpq reads one, with what the
/// URL leaves out taken from libpq's environment variables and defaults.
///
/// ```
/// postgres://user[:password]@host[:port]/db[?sslmode=require]
/// postgresql://user@/db?host=/socket/dir        (a Unix socket in /socket/dir)
/// postgresql://%2Fsocket%2Fdir/db               (the same, the folder percent-encoded as the host)
/// ```
///
/// Parameters: `host`, `port`, `user`, `password`, `dbname`, `sslmode`, `sslrootcert`,
/// `application_name`, `connect_timeout`; a parameter overrides the same part of the URL. Missing parts come from
/// `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGAPPNAME` and `PGCONNECT_TIMEOUT`,
/// then libpq's defaults: the socket folder `/var/run/postgresql` (Debian's), port 5432, the
/// user running the program, a database named like the user. The password is never printed:
/// ``description`` writes it as `***`, and no error message contains it.
public struct PostgresStoreURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// How the server is reached.
    public enum Endpoint: Sendable, Hashable {
        /// TCP to a host name or address and a port.
        case tcp(host: String, port: Int)
        /// The Unix socket `<directory>/.s.PGSQL.<port>`.
        case unixSocket(directory: String, port: Int)

        /// The port (for a Unix socket, the number in the socket file's name).
        public var port: Int {
            switch self {
            case .tcp(_, let port), .unixSocket(_, let port): return port
            }
        }

        /// The socket file's path, for a Unix socket.
        public var socketPath: String? {
            if case .unixSocket(let directory, let port) = self {
                return (directory.hasSuffix("/") ? directory : directory + "/") + ".s.PGSQL.\(port)"
            }
            return nil
        }
    }

    /// libpq's `sslmode`: whether the connection is encrypted and what is verified.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// No TLS.
        case disable
        /// libpq tries without TLS first; here it is taken as `prefer`.
        case allow
        /// TLS when the server offers it, without verifying the certificate (libpq's default).
        case prefer
        /// TLS or no connection; the certificate is not verified.
        case require
        /// TLS, and the certificate must chain to a trusted root.
        case verifyCA = "verify-ca"
        /// TLS, a trusted certificate, and the host name must match it.
        case verifyFull = "verify-full"
    }

    /// Debian's libpq looks for the server's socket here when no host is given.
    public static let defaultSocketDirectory = "/var/run/postgresql"
    /// The port when none is given.
    public static let defaultPort = 5432

    /// The server's address or socket.
    public var endpoint: Endpoint
    /// The role to connect as.
    public var user: String
    /// The database name.
    public var database: String
    /// The password written in the URL (or its `password` parameter), if any. See
    /// ``resolvePassword(environment:)`` for `PGPASSWORD` and `~/.pgpass`.
    public var password: PostgresPassword?
    /// TLS, as `sslmode` asks (TCP only: libpq ignores it for Unix sockets, and so does this).
    public var sslMode: SSLMode
    /// `sslrootcert` (or `PGSSLROOTCERT`): a PEM file of the certificates `verify-ca` and
    /// `verify-full` trust, instead of the system's (a server with its own CA, or self-signed).
    public var sslRootCertificate: String?
    /// `application_name`, shown in `pg_stat_activity`.
    public var applicationName: String?
    /// Seconds to wait for the connection, if the URL or `PGCONNECT_TIMEOUT` sets it.
    public var connectTimeout: Int?

    /// The parameters a store URL may carry.
    static let knownParameters = ["host", "port", "user", "password", "dbname", "sslmode", "sslrootcert", "application_name", "connect_timeout"]

    /// True when `string` starts with `postgres://` or `postgresql://` (any case): a store URL, not a file path.
    public static func isStoreURL(_ string: String) -> Bool {
        scheme(of: string) != nil
    }

    private static func scheme(of string: String) -> String.Index? {
        for prefix in ["postgresql://", "postgres://"] where string.lowercased().hasPrefix(prefix) {
            return string.index(string.startIndex, offsetBy: prefix.count)
        }
        return nil
    }

    /// Parses a store URL; missing parts come from `environment` (libpq's variables), then the defaults.
    /// - Throws: `BatchStoreError` `.invalidArgument` naming the part at fault (never the password).
    public init(_ string: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let start = Self.scheme(of: string) else {
            throw BatchStoreError(.invalidArgument, "a PostgreSQL store URL starts with postgres:// or postgresql://")
        }
        var rest = Substring(string[start...])
        var user: String?, password: String?, host: String?, port: String?, database: String?
        var parameters: [String: String] = [:]

        // As libpq: the user part ends at the first `@` before any `/`.
        if let at = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[at] == "@" {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userinfo.firstIndex(of: ":") {
                user = try Self.decode(userinfo[..<colon], what: "the user name")
                password = try Self.decode(userinfo[userinfo.index(after: colon)...], what: "the password")
            } else {
                user = try Self.decode(userinfo, what: "the user name")
            }
        }
        let hostEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var hostPart = rest[..<hostEnd]
        rest = rest[hostEnd...]
        if hostPart.contains("@") {
            throw BatchStoreError(.invalidArgument, "the store URL has a second @ before the host (write an @ in a user name or password as %40)")
        }
        if hostPart.contains(",") {
            throw BatchStoreError(.invalidArgument, "several hosts in one store URL are not supported")
        }
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else {
                throw BatchStoreError(.invalidArgument, "the IPv6 address in the store URL has no closing ]")
            }
            host = String(hostPart[hostPart.index(after: hostPart.startIndex)..<close])
            hostPart = hostPart[hostPart.index(after: close)...]
            if !hostPart.isEmpty && !hostPart.hasPrefix(":") {
                throw BatchStoreError(.invalidArgument, "unexpected text after the IPv6 address in the store URL")
            }
        } else {
            let colon = hostPart.firstIndex(of: ":") ?? hostPart.endIndex
            let name = try Self.decode(hostPart[..<colon], what: "the host")
            host = name.isEmpty ? nil : name
            hostPart = hostPart[colon...]
        }
        if hostPart.hasPrefix(":") {
            port = String(hostPart.dropFirst())
        }
        if rest.hasPrefix("/") {
            let end = rest.firstIndex(of: "?") ?? rest.endIndex
            let name = try Self.decode(rest[rest.index(after: rest.startIndex)..<end], what: "the database name")
            database = name.isEmpty ? nil : name
            rest = rest[end...]
        }
        if rest.hasPrefix("?") {
            for pair in rest.dropFirst().split(separator: "&", omittingEmptySubsequences: true) {
                guard let equals = pair.firstIndex(of: "=") else {
                    throw BatchStoreError(.invalidArgument, "the store URL parameter \(String(pair).debugDescription) has no value (write name=value)")
                }
                let key = try Self.decode(pair[..<equals], what: "a parameter name")
                guard Self.knownParameters.contains(key) else {
                    throw BatchStoreError(.invalidArgument, "unknown store URL parameter \(key.debugDescription) (known: \(Self.knownParameters.joined(separator: ", ")))")
                }
                parameters[key] = try Self.decode(pair[pair.index(after: equals)...], what: key == "password" ? "the password" : "the \(key) parameter")
            }
        }
        if let value = parameters["host"] { host = value.isEmpty ? nil : value }
        if let value = parameters["port"] { port = value }
        if let value = parameters["user"] { user = value }
        if let value = parameters["password"] { password = value }
        if let value = parameters["dbname"] { database = value.isEmpty ? nil : value }

        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let portText = port.flatMap { $0.isEmpty ? nil : $0 } ?? env("PGPORT")
        var portNumber = Self.defaultPort
        if let portText {
            guard let n = Int(portText), (1...65535).contains(n), portText.allSatisfy(\.isASCII) else {
                throw BatchStoreError(.invalidArgument, "invalid port \(portText.debugDescription) in the store URL (1 to 65535)")
            }
            portNumber = n
        }
        let hostName = host ?? env("PGHOST")
        if let hostName, hostName.contains(",") {
            throw BatchStoreError(.invalidArgument, "several hosts in one store URL are not supported")
        }
        if let hostName, !hostName.hasPrefix("/") {
            endpoint = .tcp(host: hostName, port: portNumber)
        } else {
            endpoint = .unixSocket(directory: hostName ?? Self.defaultSocketDirectory, port: portNumber)
        }
        guard let resolvedUser = user.flatMap({ $0.isEmpty ? nil : $0 }) ?? env("PGUSER") ?? Self.currentUserName() else {
            throw BatchStoreError(.invalidArgument, "the store URL names no user, PGUSER is not set, and the current user has no name")
        }
        self.user = resolvedUser
        self.database = database ?? env("PGDATABASE") ?? resolvedUser
        self.password = password.map(PostgresPassword.init)
        let modeText = parameters["sslmode"] ?? env("PGSSLMODE") ?? SSLMode.prefer.rawValue
        guard let mode = SSLMode(rawValue: modeText) else {
            throw BatchStoreError(.invalidArgument, "invalid sslmode \(modeText.debugDescription) (one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self.sslMode = mode
        self.sslRootCertificate = (parameters["sslrootcert"] ?? env("PGSSLROOTCERT")).flatMap { $0.isEmpty ? nil : $0 }
        self.applicationName = parameters["application_name"] ?? env("PGAPPNAME")
        if let timeout = parameters["connect_timeout"] ?? env("PGCONNECT_TIMEOUT") {
            guard let seconds = Int(timeout), seconds >= 0 else {
                throw BatchStoreError(.invalidArgument, "invalid connect_timeout \(timeout.debugDescription) (whole seconds)")
            }
            // libpq: 0 means wait forever; a value of 1 is taken as 2.
            self.connectTimeout = seconds == 0 ? nil : max(seconds, 2)
        }
    }

    /// Percent-decodes one part of the URL; the error names the part, never its text.
    private static func decode(_ text: Substring, what: String) throws -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard utf8.count >= 2, let high = hexValue(utf8.removeFirst()), let low = hexValue(utf8.removeFirst()) else {
                    throw BatchStoreError(.invalidArgument, "\(what) in the store URL has an invalid %-escape")
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self), !decoded.utf8.contains(0) else {
            throw BatchStoreError(.invalidArgument, "\(what) in the store URL is not valid UTF-8 without NUL")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The name of the user running the program (libpq's default role).
    static func currentUserName() -> String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    /// True when the connection should use TLS at all (never over a Unix socket, as libpq).
    public var usesTLS: Bool {
        if case .unixSocket = endpoint { return false }
        return sslMode != .disable
    }

    /// The URL written back in full, with the password as `***`: safe to print and log.
    public var description: String {
        var text = "postgresql://" + Self.encode(user, keep: Self.userCharacters)
        if password != nil { text += ":***" }
        text += "@"
        var query: [String] = []
        switch endpoint {
        case .tcp(let host, let port):
            text += host.contains(":") ? "[\(host)]" : Self.encode(host, keep: Self.hostCharacters)
            text += ":\(port)"
        case .unixSocket(let directory, let port):
            query.append("host=" + Self.encode(directory, keep: Self.parameterCharacters))
            if port != Self.defaultPort { query.append("port=\(port)") }
        }
        text += "/" + Self.encode(database, keep: Self.hostCharacters)
        if sslMode != .prefer { query.append("sslmode=\(sslMode.rawValue)") }
        if let sslRootCertificate { query.append("sslrootcert=" + Self.encode(sslRootCertificate, keep: Self.parameterCharacters)) }
        if let applicationName { query.append("application_name=" + Self.encode(applicationName, keep: Self.parameterCharacters)) }
        if let connectTimeout { query.append("connect_timeout=\(connectTimeout)") }
        return query.isEmpty ? text : text + "?" + query.joined(separator: "&")
    }

    public var debugDescription: String { description }

    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
    private static let userCharacters = unreserved
    private static let hostCharacters = unreserved
    private static let parameterCharacters = unreserved.union(CharacterSet(charactersIn: "/"))

    private static func encode(_ text: String, keep: CharacterSet) -> String {
        text.addingPercentEncoding(withAllowedCharacters: keep) ?? text
    }
}
