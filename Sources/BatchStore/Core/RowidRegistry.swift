/// The identity map's table for rowid-keyed objects of one entity: open addressing with linear
/// probing and backward-shift deletion, keyed by rowid, hashed by a seeded multiplication.
///
/// Swift's `Dictionary` hashes with SipHash and was a fifth of the cost of faulting a batch; this
/// table does one multiply per lookup. The per-process random seed keeps rowids chosen by a hostile
/// file from piling into one probe run.
final class RowidRegistry {
    private var keys: UnsafeMutablePointer<Int64>
    private var values: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private var capacity: Int
    private var shift: UInt64
    private(set) var count = 0
    private static let seed = UInt64.random(in: 1...UInt64.max)

    init(capacity: Int = 1024) {
        self.capacity = capacity
        self.shift = UInt64(64 - capacity.trailingZeroBitCount)
        keys = .allocate(capacity: capacity)
        values = .allocate(capacity: capacity)
        values.initialize(repeating: nil, count: capacity)
        keys.initialize(repeating: 0, count: capacity)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    @inline(__always)
    private func home(_ key: Int64) -> Int {
        Int(truncatingIfNeeded: ((UInt64(bitPattern: key) ^ Self.seed) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The object pointer for `key`, if registered.
    @inline(__always)
    func find(_ key: Int64) -> UnsafeMutableRawPointer? {
        var i = home(key)
        let mask = capacity - 1
        while let v = values[i] {
            if keys[i] == key { return v }
            i = (i + 1) & mask
        }
        return nil
    }

    /// Registers `value` for `key`, replacing any entry.
    func insert(_ key: Int64, _ value: UnsafeMutableRawPointer) {
        if (count + 1) * 2 > capacity { resize(capacity * 2) }
        var i = home(key)
        let mask = capacity - 1
        while values[i] != nil {
            if keys[i] == key { values[i] = value; return }
            i = (i + 1) & mask
        }
        keys[i] = key
        values[i] = value
        count += 1
    }

    /// The entry for `key`, or a new one made by `make`, with one probe sequence.
    @inline(__always)
    func findOrInsert(_ key: Int64, _ make: () -> UnsafeMutableRawPointer) -> (UnsafeMutableRawPointer, Bool) {
        if (count + 1) * 2 > capacity { resize(capacity * 2) }
        var i = home(key)
        let mask = capacity - 1
        while let v = values[i] {
            if keys[i] == key { return (v, false) }
            i = (i + 1) & mask
        }
        let v = make()
        keys[i] = key
        values[i] = v
        count += 1
        return (v, true)
    }

    /// Removes the entry for `key` if it is `value` (or any value when `value` is nil).
    func remove(_ key: Int64, ifValue value: UnsafeMutableRawPointer?) {
        var i = home(key)
        let mask = capacity - 1
        while let v = values[i] {
            if keys[i] == key {
                if let value, v != value { return }
                // Backward-shift deletion keeps probe runs unbroken without tombstones.
                var hole = i
                var j = (i + 1) & mask
                while values[j] != nil {
                    let h = home(keys[j])
                    // Move entry j into the hole if its home is not in (hole, j] cyclically.
                    let inRange = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j)
                    if !inRange {
                        keys[hole] = keys[j]
                        values[hole] = values[j]
                        hole = j
                    }
                    j = (j + 1) & mask
                }
                values[hole] = nil
                count -= 1
                if capacity > 4096 && count * 16 < capacity { resize(capacity / 4) }
                return
            }
            i = (i + 1) & mask
        }
    }

    /// Every registered pointer.
    func allValues() -> [UnsafeMutableRawPointer] {
        (0..<capacity).compactMap { values[$0] }
    }

    func removeAll() {
        values.update(repeating: nil, count: capacity)
        count = 0
    }

    private func resize(_ newCapacity: Int) {
        let oldKeys = keys, oldValues = values, oldCapacity = capacity
        capacity = max(1024, newCapacity)
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        keys = .allocate(capacity: capacity)
        values = .allocate(capacity: capacity)
        values.initialize(repeating: nil, count: capacity)
        keys.initialize(repeating: 0, count: capacity)
        count = 0
        for i in 0..<oldCapacity { if let v = oldValues[i] { insert(oldKeys[i], v) } }
        oldKeys.deallocate()
        oldValues.deallocate()
    }
}
