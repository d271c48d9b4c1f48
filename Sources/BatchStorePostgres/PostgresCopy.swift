import BatchStore
import Foundation
import NIOCore
import PostgresNIO

/// `COPY … FROM STDIN` for `faultline import` over PostgreSQL: what psql's `\copy` sends, rows as
/// COPY's text format, in chunks of about 256 KB, so the server reads each value with its type's
/// input function as it would a literal (the multi-row INSERT path cast each value in SQL and
/// made the server parse a statement of 30,000 parameters: 49 s for a 336,776-row file where
/// `\copy` takes 1.3 s).
extension PostgresSession {
    /// A source of COPY text lines, read on the task that writes them.
    final class CopyRows: @unchecked Sendable {
        let next: () throws -> String?
        init(_ next: @escaping () throws -> String?) { self.next = next }
    }

    /// What a COPY the server refused says: its error, and the line of the data at fault (1 for
    /// the first row sent) when the server names one.
    struct CopyFailure: Error {
        var error: BatchStoreError
        var line: Int?
    }

    /// Sends `COPY <schema>.<table> (<columns>) FROM STDIN` (names as the catalog has them) and the lines `rows` gives (each one row,
    /// ending in a newline), in this session's transaction; answers the rows sent. An error
    /// `rows` throws ends the data there: the rows before it are still sent and checked by the
    /// server, and then that error is thrown (a dry run's end, or a file's bad line).
    /// - Throws: ``CopyFailure`` for the server's refusal; `rows`' own error after a good COPY.
    func copy(schema: String, table name: String, columns names: [String], rows: CopyRows) throws -> Int {
        // postgres-nio writes `COPY "<table>" ("<column>", …)` with the text between the quotes as
        // given: each name goes in with its quotes doubled, and the schema's closing quote, the
        // dot and the table's opening quote in the table's text, so the statement names them
        // exactly (`"sch""ema"."ta""ble"`).
        func inner(_ s: String) -> String { s.replacingOccurrences(of: "\"", with: "\"\"") }
        let table = inner(schema) + "\".\"" + inner(name)
        let columns = names.map(inner)
        let connection = self.connection
        let logger = self.logger
        let promise = connection.eventLoop.makePromise(of: Int.self)
        final class Stop: @unchecked Sendable { var error: (any Error)? }
        let stop = Stop()
        promise.completeWithTask {
            var written = 0
            try await connection.copyFrom(table: table, columns: columns, logger: logger) { writer in
                var buffer = ByteBuffer()
                buffer.reserveCapacity(1 << 18)
                while true {
                    let line: String?
                    do { line = try rows.next() } catch { stop.error = error; break }
                    guard let line else { break }
                    buffer.writeString(line)
                    written += 1
                    if buffer.readableBytes >= 1 << 18 {
                        try await writer.write(buffer)
                        buffer = ByteBuffer()
                        buffer.reserveCapacity(1 << 18)
                    }
                }
                if buffer.readableBytes > 0 { try await writer.write(buffer) }
            }
            return written
        }
        let written: Int
        do {
            written = try Self.waitOffLoop(promise.futureResult)
        } catch let error as PSQLError {
            var line: Int?
            if let context = error.serverInfo?[.locationContext], let range = context.range(of: #"line [0-9]+"#, options: String.CompareOptions.regularExpression) {
                line = Int(context[range].dropFirst(5))
            }
            throw CopyFailure(error: PostgresErrors.wrap(error), line: line)
        } catch {
            throw CopyFailure(error: PostgresErrors.wrap(error), line: nil)
        }
        if let error = stop.error { throw error }
        return written
    }

    /// `value` in COPY's text format for `column`: `\N` for NULL; text with backslash, tab,
    /// newline and carriage return escaped; a blob as `\\x` and hex (bytea's input, escaped).
    /// Nil for a value the INSERT path reads differently than a literal would (a number, or a
    /// blob for a column that is not bytea): the caller writes those rows by INSERT.
    static func copyText(_ value: SQLValue, for column: PostgresColumn) -> String? {
        var out = ""
        return appendCopyText(value, for: column, to: &out) ? out : nil
    }

    /// ``copyText(_:for:)`` appended to `out`; false (and `out` partly written) for a value the
    /// INSERT path must take. Text with none of the bytes COPY escapes is appended as it is.
    static func appendCopyText(_ value: SQLValue, for column: PostgresColumn, to out: inout String) -> Bool {
        switch value {
        case .null:
            out += "\\N"
            return true
        case .text(let s):
            // Backslash, tab, newline, carriage return and NUL are the bytes that matter, all
            // ASCII; UTF-8 never uses an ASCII byte inside another character.
            let plain = s.utf8.withContiguousStorageIfAvailable { bytes in
                !bytes.contains { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0 }
            }
            if plain == true {
                out += s
                return true
            }
            for c in s.unicodeScalars {
                switch c {
                case "\\": out += "\\\\"
                case "\t": out += "\\t"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\0": return false   // PostgreSQL text holds no NUL: the INSERT path says so
                default: out.unicodeScalars.append(c)
                }
            }
            return true
        case .blob(let data) where column.kind == .blob:
            out += "\\\\x"
            let digits = Array("0123456789abcdef".unicodeScalars)
            for byte in data {
                out.unicodeScalars.append(digits[Int(byte >> 4)])
                out.unicodeScalars.append(digits[Int(byte & 0x0F)])
            }
            return true
        default:
            return false
        }
    }
}
