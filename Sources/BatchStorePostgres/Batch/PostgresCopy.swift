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
    /// What a COPY the server refused says: its error, and the line of the data at fault (1 for
    /// the first row sent) when the server names one.
    struct CopyFailure: Error {
        var error: BatchStoreError
        var line: Int?
    }

    /// Sends `COPY <schema>.<table> (<columns>) FROM STDIN` (names as the catalog has them) and the
    /// rows `nextRow` writes, in this session's transaction; answers the rows sent. `nextRow` runs
    /// on the calling thread: each call appends one row (ending in a newline) to the buffer and
    /// answers true, or answers false at the end. An error
    /// `nextRow` throws ends the data there: the rows before it are still sent and checked by the
    /// server, and then that error is thrown (a dry run's end, or a file's bad line).
    /// - Throws: ``CopyFailure`` for the server's refusal; `nextRow`'s own error after a good COPY.
    func copy(schema: String, table name: String, columns names: [String], nextRow: (inout ByteBuffer) throws -> Bool) throws -> Int {
        // postgres-nio writes `COPY "<table>" ("<column>", …)` with the text between the quotes as
        // given: each name goes in with its quotes doubled, and the schema's closing quote, the
        // dot and the table's opening quote in the table's text, so the statement names them
        // exactly (`"sch""ema"."ta""ble"`).
        func inner(_ s: String) -> String { s.replacingOccurrences(of: "\"", with: "\"\"") }
        let table = inner(schema) + "\".\"" + inner(name)
        let columns = names.map(inner)
        let connection = self.connection
        let logger = self.logger
        // The rows are made into COPY text here, on the calling thread, while the connection's
        // task writes the chunks made before: reading the file and the server's reading of the
        // rows overlap, as psql's \copy overlaps its reads with the server. At most four chunks
        // (1 MiB) wait between the two.
        let pipe = CopyPipe(limit: 4)
        let (chunks, continuation) = AsyncStream<ByteBuffer>.makeStream()
        let promise = connection.eventLoop.makePromise(of: Void.self)
        promise.completeWithTask {
            defer { pipe.stop() }
            try await connection.copyFrom(table: table, columns: columns, logger: logger) { writer in
                for await chunk in chunks {
                    try await writer.write(chunk)
                    pipe.written()
                }
            }
        }
        var written = 0
        var failure: (any Error)?
        var buffer = ByteBuffer()
        buffer.reserveCapacity(1 << 18)
        while true {
            do { guard try nextRow(&buffer) else { break } } catch { failure = error; break }
            written += 1
            if buffer.readableBytes >= 1 << 18 {
                guard pipe.waitForRoom() else { break }
                continuation.yield(buffer)
                buffer = ByteBuffer()
                buffer.reserveCapacity(1 << 18)
            }
        }
        if buffer.readableBytes > 0, pipe.waitForRoom() { continuation.yield(buffer) }
        continuation.finish()
        do {
            try Self.waitOffLoop(promise.futureResult)
        } catch let error as PSQLError {
            var line: Int?
            if let context = error.serverInfo?[.locationContext], let range = context.range(of: #"line [0-9]+"#, options: String.CompareOptions.regularExpression) {
                line = Int(context[range].dropFirst(5))
            }
            throw CopyFailure(error: PostgresErrors.wrap(error), line: line)
        } catch {
            throw CopyFailure(error: PostgresErrors.wrap(error), line: nil)
        }
        if let failure { throw failure }
        return written
    }

    /// How many chunks may wait between the thread that makes them and the task that writes them;
    /// once the task ends (done, or the server refused the COPY) the maker stops waiting.
    final class CopyPipe: @unchecked Sendable {
        private let condition = NSCondition()
        private let limit: Int
        private var waiting = 0
        private var stopped = false

        init(limit: Int) { self.limit = limit }

        /// Waits until fewer than `limit` chunks wait, and counts one more; false once stopped.
        func waitForRoom() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            while waiting >= limit && !stopped { condition.wait() }
            if stopped { return false }
            waiting += 1
            return true
        }

        func written() {
            condition.lock()
            waiting -= 1
            condition.signal()
            condition.unlock()
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.broadcast()
            condition.unlock()
        }
    }

    /// `value` in COPY's text format for `column`, written to `out`: `\N` for NULL; text with
    /// backslash, tab, newline and carriage return escaped; a blob as `\\x` and hex (bytea's
    /// input, escaped). False (and `out` partly written: the caller moves its writer index back)
    /// for a value the INSERT path reads differently than a literal would (a number, a NUL in
    /// text, or a blob for a column that is not bytea): the caller writes those rows by INSERT.
    static func appendCopyText(_ value: SQLValue, for column: PostgresColumn, to out: inout ByteBuffer) -> Bool {
        switch value {
        case .null:
            out.writeInteger(UInt16(0x5C4E))   // \N
            return true
        case .text(var s):
            // Backslash, tab, newline, carriage return and NUL are the bytes that matter, all
            // ASCII; UTF-8 never uses an ASCII byte inside another character.
            return s.withUTF8 { bytes in
                guard bytes.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0 }) else {
                    out.writeBytes(bytes)
                    return true
                }
                for byte in bytes {
                    switch byte {
                    case 0x5C: out.writeInteger(UInt16(0x5C5C))   // \\
                    case 0x09: out.writeInteger(UInt16(0x5C74))   // \t
                    case 0x0A: out.writeInteger(UInt16(0x5C6E))   // \n
                    case 0x0D: out.writeInteger(UInt16(0x5C72))   // \r
                    case 0: return false   // PostgreSQL text holds no NUL: the INSERT path says so
                    default: out.writeInteger(byte)
                    }
                }
                return true
            }
        case .blob(let data) where column.kind == .blob:
            out.writeBytes([0x5C, 0x5C, 0x78])   // \\x: bytea's hex input, its backslash escaped
            let digits: [UInt8] = Array("0123456789abcdef".utf8)
            out.reserveCapacity(minimumWritableBytes: data.count * 2)
            for byte in data {
                out.writeInteger(digits[Int(byte >> 4)])
                out.writeInteger(digits[Int(byte & 0x0F)])
            }
            return true
        default:
            return false
        }
    }
}
