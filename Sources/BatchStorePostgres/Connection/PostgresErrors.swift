import BatchStore
import Foundation
import PostgresNIO

/// postgres-nio's and SwiftNIO's failures as one-line `BatchStoreError`s (PSQLError's own
/// description is deliberately generic, so the line is built from what the server said).
enum PostgresErrors {
    /// A failure while connecting and authenticating: prefixed with the URL (password hidden);
    /// an authentication failure says where the password came from, or why `~/.pgpass` was ignored.
    static func connecting(_ error: any Error, url: PostgresStoreURL, passwordSource: PostgresPasswordSource, note: String?) -> BatchStoreError {
        if let error = error as? BatchStoreError { return error }
        var wrapped = wrap(error, endpoint: url.endpoint)
        if wrapped.code == .authenticationFailed {
            var facts: [String] = []
            switch passwordSource {
            case .url: facts.append("the password came from the URL")
            case .environment: facts.append("the password came from PGPASSWORD")
            case .passFile(let path): facts.append("the password came from \(path)")
            case .none: break
            }
            if let note { facts.append(note) }
            if !facts.isEmpty { wrapped = BatchStoreError(wrapped.code, wrapped.message + " (" + facts.joined(separator: "; ") + ")") }
        }
        return BatchStoreError(wrapped.code, "\(url): \(wrapped.message)")
    }

    /// Any failure of a session as one line; `endpoint` names the server when the connection itself failed.
    static func wrap(_ error: any Error, endpoint: PostgresStoreURL.Endpoint? = nil) -> BatchStoreError {
        if let error = error as? BatchStoreError { return error }
        // postgres-nio's older API (its prepared statements: PostgresSession.sendPrepared) turns
        // its errors into these: the same server errors, the same one line.
        if let legacy = error as? PostgresError {
            switch legacy {
            case .server(let answer):
                return server(state: answer.fields[.sqlState], message: answer.fields[.message], detail: answer.fields[.detail])
            case .connectionClosed:
                return BatchStoreError(.serverUnavailable, "the PostgreSQL server\(at(endpoint)) closed the connection")
            case .protocol(let text):
                return BatchStoreError(.postgres("XX000"), "PostgreSQL\(at(endpoint)): \(capped(oneLine(text), 300))")
            }
        }
        guard let error = error as? PSQLError else {
            return BatchStoreError(.serverUnavailable, "cannot reach PostgreSQL\(at(endpoint)): \(oneLine(String(describing: error)))")
        }
        switch error.code {
        case .server:
            return server(error)
        case .connectionError:
            return BatchStoreError(.serverUnavailable, "cannot connect to PostgreSQL\(at(endpoint)): \(reason(error.underlying, endpoint: endpoint))")
        case .serverClosedConnection, .uncleanShutdown:
            return BatchStoreError(.serverUnavailable, "the PostgreSQL server\(at(endpoint)) closed the connection")
        case .clientClosedConnection:
            return BatchStoreError(.serverUnavailable, "the connection to PostgreSQL is closed")
        case .authMechanismRequiresPassword:
            return BatchStoreError(.authenticationFailed, "the server asks for a password and none was given (in the URL, PGPASSWORD or ~/.pgpass)")
        case .unsupportedAuthMechanism, .saslError:
            return BatchStoreError(.authenticationFailed, "authentication failed: the server asks for an authentication method that cannot be answered (\(error.code))")
        case .sslUnsupported:
            return BatchStoreError(.serverUnavailable, "the server\(at(endpoint)) does not offer TLS, which sslmode asks for")
        case .queryCancelled:
            return BatchStoreError(.cancelled, "cancelled")
        case .tooManyParameters:
            return BatchStoreError(.invalidQuery, "too many parameters in one statement (PostgreSQL takes at most 65,535)")
        default:
            return BatchStoreError(.postgres("XX000"), "PostgreSQL\(at(endpoint)): \(error.code)")
        }
    }

    /// What the server said, by SQLSTATE class: authentication, missing database, privileges,
    /// connection, or anything else with its SQLSTATE.
    private static func server(_ error: PSQLError) -> BatchStoreError {
        server(state: error.serverInfo?[.sqlState], message: error.serverInfo?[.message], detail: error.serverInfo?[.detail])
    }

    private static func server(state: String?, message: String?, detail: String?) -> BatchStoreError {
        let state = state ?? "XX000"
        // A message can quote a whole value (invalid input syntax for type date: "…"): a line
        // stays a line.
        var message = capped(oneLine(message ?? "unknown server error"), 300)
        if let detail = detail.map(oneLine), !detail.isEmpty, detail.count <= 200 {
            message += " (\(detail))"
        }
        switch state {
        case "28P01", "28000": return BatchStoreError(.authenticationFailed, message)
        case "3D000": return BatchStoreError(.noSuchDatabase, message)
        case "42501": return BatchStoreError(.permissionDenied, message)
        case "57014":
            // A cancel request (ours) is a cancel; the server's statement_timeout is an error to show.
            if message.contains("statement timeout") {
                return BatchStoreError(.postgres(state), "\(message): the server's statement_timeout stopped it")
            }
            return BatchStoreError(.cancelled, message)
        case "23505", "23503", "23502", "23514", "23P01": return BatchStoreError(.constraint, "constraint failed: \(message)")
        case "42P01": return BatchStoreError(.noSuchEntity, message)
        case "42703": return BatchStoreError(.noSuchAttribute, message)
        case "42601": return BatchStoreError(.syntax, message)
        // A value the column's type cannot read (a literal in a predicate or an assignment, a
        // file's value): bad input, as a predicate SQLite refuses is.
        case "22P02", "22007", "22008": return BatchStoreError(.invalidQuery, message)
        default:
            if state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03" {
                return BatchStoreError(.serverUnavailable, message)
            }
            return BatchStoreError(.postgres(state), message)
        }
    }

    /// Why a connection could not be made, from SwiftNIO's error (an errno for sockets).
    private static func reason(_ underlying: (any Error)?, endpoint: PostgresStoreURL.Endpoint?) -> String {
        guard let underlying else { return "the connection failed" }
        if let io = underlying as? IOError {
            return errnoReason(io.errnoCode, endpoint: endpoint)
        }
        if let connection = underlying as? NIOConnectionError {
            if let first = connection.connectionErrors.first, let io = first.error as? IOError {
                return errnoReason(io.errnoCode, endpoint: endpoint)
            }
            if connection.dnsAError != nil || connection.dnsAAAAError != nil {
                return "the host name cannot be resolved"
            }
            return "no address of the host accepts connections"
        }
        if let channel = underlying as? ChannelError, case .connectTimeout(let amount) = channel {
            return "no answer within \(amount.nanoseconds / 1_000_000_000) s"
        }
        // swift-nio-ssl's errors print BoringSSL's internals (and a build path): say what they mean.
        let text = String(describing: underlying)
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's TLS certificate is not trusted (give its CA certificate as sslrootcert, or sslmode=require to encrypt without checking it)"
        }
        if text.contains("failedToValidateHostname") {
            return "the server's TLS certificate does not name this host (sslmode=verify-full checks it; verify-ca does not)"
        }
        if text.contains("handshakeFailed") || text.contains("NIOSSL") {
            return "the TLS handshake failed"
        }
        return oneLine(text)
    }

    private static func errnoReason(_ code: Int32, endpoint: PostgresStoreURL.Endpoint?) -> String {
        let isSocket = endpoint?.socketPath != nil
        switch code {
        case ENOENT: return isSocket ? "no server is running there (the socket file does not exist)" : "no such address"
        case ECONNREFUSED: return isSocket ? "connection refused (a socket file is there but no server accepts on it)" : "connection refused (is the server running and listening on that port?)"
        case EACCES: return "permission denied on the socket"
        case ETIMEDOUT: return "the connection timed out"
        case EHOSTUNREACH, ENETUNREACH: return "the host cannot be reached"
        default: return String(cString: strerror(code))
        }
    }

    /// ` at /dir/.s.PGSQL.5432` or ` at host:port`, or nothing.
    private static func at(_ endpoint: PostgresStoreURL.Endpoint?) -> String {
        switch endpoint {
        case .unixSocket?: return " at \(endpoint?.socketPath ?? "")"
        case .tcp(let host, let port)?: return " at \(host.contains(":") ? "[\(host)]" : host):\(port)"
        case nil: return ""
        }
    }

    /// `text` cut to `limit` characters, with `…` where it was cut.
    static func capped(_ text: String, _ limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }

    /// Line breaks and tabs as spaces: every message is one line.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0.isNewline || $0 == "\t" }).joined(separator: " ")
    }
}
