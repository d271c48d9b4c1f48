import Foundation
import GRDB
import GRDBSQLite

/// Foundation's folding of UTF-8 text, computed piece by piece, for `bs_search`: ASCII
/// characters fold byte by byte; each run of characters past ASCII, with the ASCII character
/// before it (a combining mark may belong to it), is folded by Foundation once and remembered.
/// The result is Foundation's folding of the whole text: case folding maps each character alone,
/// and normalisation never joins an ASCII character to what comes before it, so the pieces fold
/// independently (`FoldedASCIISearchTests` checks it against whole-text folding). A search of a
/// column whose text has a few distinct pieces past ASCII ("é", "東京物語") then costs a scan of
/// bytes and a lookup per piece, not a Foundation fold per row.
///
/// One per connection (no lock); at most 4,096 pieces per kind are kept, then all are forgotten
/// at once, so memory stays flat.
package final class PieceFolds {
    package init() {}
    /// A piece of up to 24 bytes with its flags, packed, so a lookup allocates nothing.
    private struct Short: Hashable { var a: UInt64 = 0, b: UInt64 = 0, c: UInt64 = 0, count: UInt8, flags: UInt8 }
    private var short: [Short: [UInt8]] = [:]
    /// 512 direct-mapped slots in front of `short`, each a piece of up to 24 bytes and its
    /// folding of up to 72.
    private struct Slot {
        var a: UInt64 = 0, b: UInt64 = 0, c: UInt64 = 0
        var meta: UInt32 = .max
        var length: Int32 = 0
        var bytes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
    }
    private let slots: UnsafeMutablePointer<Slot> = {
        let p = UnsafeMutablePointer<Slot>.allocate(capacity: 512)
        p.initialize(repeating: Slot(), count: 512)
        return p
    }()
    deinit { slots.deallocate() }
    private var long: [[UInt8]: [UInt8]] = [:]
    static let limit = 4_096

    /// Room enough for any folding of `count` bytes: case folding triples a character at most
    /// (ΐ: 2 bytes to 6), diacritic folding only shortens.
    static func capacity(_ count: Int) -> Int { count * 3 + 16 }

    /// Whether `hay` folded by `flags` contains (op 0), begins with (1) or ends with (2) `needle`.
    func search(_ op: Int, flags: Int, _ hay: UnsafeBufferPointer<UInt8>, _ needle: UnsafeBufferPointer<UInt8>) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.capacity(hay.count)) { buffer in
            guard let count = fold(hay, flags: flags, into: buffer) else {
                var whole = SQLFunctions.fold(String(decoding: hay, as: UTF8.self), flags: flags)
                return whole.withUTF8 { SQLFunctions.has(op, $0, needle) }
            }
            return SQLFunctions.has(op, UnsafeBufferPointer(rebasing: buffer[0..<count]), needle)
        }
    }

    /// Writes the folding of `text` into `buffer`; its length, or nil if it did not fit.
    func fold(_ text: UnsafeBufferPointer<UInt8>, flags: Int, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int? {
        let lower = flags & 1 != 0
        var i = 0, k = 0
        let n = text.count
        while i < n {
            let b = text[i]
            if b < 0x80, i + 1 >= n || text[i + 1] < 0x80 {
                guard k < buffer.count else { return nil }
                buffer[k] = lower && b >= 0x41 && b <= 0x5A ? b | 0x20 : b
                k += 1
                i += 1
                continue
            }
            let start = i
            if b < 0x80 { i += 1 }
            while i < n, text[i] >= 0x80 { i += 1 }
            let p = UnsafeBufferPointer(rebasing: text[start..<i])
            if p.count <= 24 {
                // The direct-mapped slots first: no hashing, no reference counting.
                var key: (UInt64, UInt64, UInt64) = (0, 0, 0)
                withUnsafeMutableBytes(of: &key) { $0.copyMemory(from: UnsafeRawBufferPointer(p)) }
                let meta = UInt32(p.count) | UInt32(flags) << 8
                let mixed = (key.0 &* 0x9E37_79B9_7F4A_7C15) ^ (key.1 &* 0xC2B2_AE3D_27D4_EB4F) ^ (key.2 &* 0x1656_67B1_9E37_79F9) ^ UInt64(meta)
                let slot = slots + Int(truncatingIfNeeded: (mixed &* 0x9E37_79B9_7F4A_7C15) >> 55)
                if slot.pointee.meta == meta, slot.pointee.a == key.0, slot.pointee.b == key.1, slot.pointee.c == key.2 {
                    let length = Int(slot.pointee.length)
                    guard k + length <= buffer.count else { return nil }
                    withUnsafeBytes(of: &slot.pointee.bytes) { stored in
                        for j in 0..<length { buffer[k + j] = stored[j] }
                    }
                    k += length
                    continue
                }
                let folded = piece(p, flags: flags)
                if folded.count <= MemoryLayout.size(ofValue: slot.pointee.bytes) {
                    slot.pointee.meta = meta
                    slot.pointee.a = key.0; slot.pointee.b = key.1; slot.pointee.c = key.2
                    slot.pointee.length = Int32(folded.count)
                    withUnsafeMutableBytes(of: &slot.pointee.bytes) { raw in folded.withUnsafeBytes { raw.copyMemory(from: $0) } }
                }
                guard k + folded.count <= buffer.count else { return nil }
                for f in folded { buffer[k] = f; k += 1 }
                continue
            }
            let folded = piece(p, flags: flags)
            guard k + folded.count <= buffer.count else { return nil }
            for f in folded { buffer[k] = f; k += 1 }
        }
        return k
    }

    private func piece(_ p: UnsafeBufferPointer<UInt8>, flags: Int) -> [UInt8] {
        if p.count <= 24 {
            var key = Short(count: UInt8(p.count), flags: UInt8(flags))
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                for (i, b) in p.enumerated() { raw[i] = b }
            }
            key.a = words.0; key.b = words.1; key.c = words.2
            if let known = short[key] { return known }
            let folded = Self.foundation(p, flags: flags)
            if short.count >= Self.limit { short = [:] }
            short[key] = folded
            return folded
        }
        let key = Array(p) + [UInt8(flags)]
        if let known = long[key] { return known }
        let folded = Self.foundation(p, flags: flags)
        if long.count >= Self.limit { long = [:] }
        long[key] = folded
        return folded
    }

    private static func foundation(_ p: UnsafeBufferPointer<UInt8>, flags: Int) -> [UInt8] {
        Array(SQLFunctions.fold(String(decoding: p, as: UTF8.self), flags: flags).utf8)
    }
}
