import Foundation

/// Reads bytes in 64 KiB chunks from a file handle or from memory, byte by byte or line by line.
public final class ByteReader {
    private let read: (Int) -> Data
    private var buffer: [UInt8] = []
    private var index = 0
    private var eof = false

    /// Reads `handle` (a file, a pipe, standard input) as it goes.
    public convenience init(_ handle: FileHandle) {
        self.init { handle.readData(ofLength: $0) }
    }

    /// Reads `data`, in chunks as from a file (for tests and fuzzing).
    public convenience init(data: Data) {
        var offset = data.startIndex
        self.init { count in
            let end = min(offset + count, data.endIndex)
            defer { offset = end }
            return data[offset..<end]
        }
    }

    /// Reads what `read(n)` returns (at most n bytes; empty at the end).
    public init(read: @escaping (Int) -> Data) { self.read = read }

    private func fill() -> Bool {
        if index < buffer.count { return true }
        if eof { return false }
        let data = read(65_536)
        if data.isEmpty { eof = true; return false }
        buffer = [UInt8](data)
        index = 0
        return true
    }

    /// True when no byte is left.
    public var isAtEnd: Bool { !fill() }

    /// The next byte, or nil at the end.
    public func next() -> UInt8? {
        guard fill() else { return nil }
        defer { index += 1 }
        return buffer[index]
    }

    /// The next byte without consuming it.
    public func peek() -> UInt8? { fill() ? buffer[index] : nil }

    /// Skips `prefix` when the unread bytes start with it (reading on while the chunk holds
    /// fewer bytes than the prefix, as a pipe may give); returns true then.
    public func skip(prefix: [UInt8]) -> Bool {
        guard fill() else { return false }
        while buffer.count - index < prefix.count, !eof {
            let data = read(65_536)
            if data.isEmpty { eof = true } else { buffer.append(contentsOf: data) }
        }
        guard buffer.count - index >= prefix.count, buffer[index..<(index + prefix.count)].elementsEqual(prefix) else { return false }
        index += prefix.count
        return true
    }

    /// Hands the unread bytes of the current chunk (read first when none is left) to `body`,
    /// which returns how many of them it used; false, without calling it, at the end.
    public func consumeChunk(_ body: (UnsafeBufferPointer<UInt8>) throws -> Int) rethrows -> Bool {
        guard fill() else { return false }
        let start = index
        let used = try buffer.withUnsafeBufferPointer { all in try body(UnsafeBufferPointer(rebasing: all[start...])) }
        index = start + min(max(used, 0), buffer.count - start)
        return true
    }

    /// The bytes up to the next LF (not included), or to the end; nil at the end.
    public func readLine() -> [UInt8]? {
        guard fill() else { return nil }
        var line: [UInt8] = []
        while fill() {
            if let newline = buffer[index...].firstIndex(of: 10) {
                line.append(contentsOf: buffer[index..<newline])
                index = newline + 1
                return line
            }
            line.append(contentsOf: buffer[index...])
            index = buffer.count
        }
        return line
    }

    /// Every byte left.
    public func readAll() -> Data {
        var data = Data(fill() ? buffer[index...] : [])
        index = buffer.count
        while !eof {
            let chunk = read(65_536)
            if chunk.isEmpty { eof = true } else { data.append(chunk) }
        }
        return data
    }
}
