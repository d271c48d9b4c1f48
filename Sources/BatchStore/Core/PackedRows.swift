import Foundation

/// The values of one faulted batch, packed in three flat buffers and decoded only when read.
///
/// A batch fault used to build, per row, an array of ``SQLValue`` with a `String` per text column:
/// one allocation per row and per text value, most of which a sweep or a scrolling view never
/// reads. A `PackedRows` makes a handful of allocations per batch: a type tag and a 64-bit word per
/// cell (the integer, the double's bits, or the byte offset of a text or blob), the byte lengths,
/// and one byte arena holding every text and blob of the batch. ``value(row:column:)`` decodes one
/// cell into an ``SQLValue`` (text keeps embedded NULs: it is decoded with its byte length).
///
/// Objects fulfilled by a batch point here (``ManagedObject`` storage `.packed`). When the
/// collection drops the batch, objects still held elsewhere are given their own decoded values
/// (``ManagedObject/detachFromPackedRows()``), so a kept object never pins a whole batch.
package final class PackedRows {
    let columns: Int
    let capacity: Int
    // The cells and the arena are internal, not private, for the fill path alone: an engine's
    // reader (SQLite's `appendRow(_:from:)`, PackedRows+SQLite.swift) writes them in place; the
    // rest of the module reads values through ``value(row:column:)``.
    private let cells: Int
    var rowCount = 0
    let tags: UnsafeMutablePointer<UInt8>
    let words: UnsafeMutablePointer<Int64>
    let lengths: UnsafeMutablePointer<Int32>
    private var arena: UnsafeMutableRawPointer?
    private var arenaUsed = 0
    private var arenaCapacity = 0

    static let null: UInt8 = 0, integer: UInt8 = 1, real: UInt8 = 2, text: UInt8 = 3, blob: UInt8 = 4

    init(rows: Int, columns: Int) {
        self.columns = columns
        self.capacity = max(1, rows)
        cells = max(1, rows * columns)
        tags = .allocate(capacity: cells)
        words = .allocate(capacity: cells)
        lengths = .allocate(capacity: cells)
    }

    deinit {
        tags.deallocate()
        words.deallocate()
        lengths.deallocate()
        arena?.deallocate()
    }

    /// Empties the rows for reuse by another batch of the same shape; keeps the arena unless it
    /// grew past 1 MiB (a batch of large blobs), which is freed.
    func reset() {
        rowCount = 0
        arenaUsed = 0
        if arenaCapacity > 1 << 20 {
            arena?.deallocate()
            arena = nil
            arenaCapacity = 0
        }
    }

    /// Bytes held by this batch (a tag, a word and a length per cell, and the arena), for statistics.
    var byteCount: Int { cells * 13 + arenaCapacity }

    @inline(__always)
    func store(_ bytes: UnsafeRawPointer?, count: Int, cell: Int) {
        words[cell] = Int64(arenaUsed)
        lengths[cell] = Int32(truncatingIfNeeded: count)
        guard let bytes, count > 0 else { lengths[cell] = 0; return }
        if arenaUsed + count > arenaCapacity { grow(to: arenaUsed + count) }
        guard let arena else { preconditionFailure("PackedRows: the arena is allocated before the first copy") }
        (arena + arenaUsed).copyMemory(from: bytes, byteCount: count)
        arenaUsed += count
    }

    private func grow(to needed: Int) {
        var newCapacity = max(4096, arenaCapacity * 2)
        while newCapacity < needed { newCapacity *= 2 }
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        if let arena {
            fresh.copyMemory(from: arena, byteCount: arenaUsed)
            arena.deallocate()
        }
        arena = fresh
        arenaCapacity = newCapacity
    }

    /// The value of `column` in `row`, decoded.
    @inline(__always)
    func value(row: Int, column: Int) -> SQLValue {
        let cell = row * columns + column
        switch tags[cell] {
        case Self.integer: return .integer(words[cell])
        case Self.real: return .real(Double(bitPattern: UInt64(bitPattern: words[cell])))
        case Self.text:
            let count = Int(lengths[cell])
            guard count > 0, let arena else { return .text("") }
            let start = (arena + Int(words[cell])).assumingMemoryBound(to: UInt8.self)
            return .text(String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self))
        case Self.blob:
            let count = Int(lengths[cell])
            guard count > 0, let arena else { return .blob(Data()) }
            return .blob(Data(bytes: arena + Int(words[cell]), count: count))
        default: return .null
        }
    }

    /// Every value of `row`, decoded.
    func values(row: Int) -> [SQLValue] {
        (0..<columns).map { value(row: row, column: $0) }
    }
}
