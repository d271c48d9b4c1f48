@testable import BatchStore
import Testing

@Suite struct RowidRegistryTests {
    /// Random inserts, conditional removals and lookups agree with a Dictionary model, through
    /// growth, shrinking and backward-shift deletion.
    @Test func agreesWithADictionaryModel() {
        let table = RowidRegistry()
        var model: [Int64: UnsafeMutableRawPointer] = [:]
        var rng = SplitMix64(seed: 7)
        let pointers = (1...64).map { UnsafeMutableRawPointer(bitPattern: $0 * 16)! }
        for step in 0..<200_000 {
            // Keys clustered (sequential rowids) and scattered (hostile ones), both.
            let key: Int64 = rng.below(2) == 0 ? Int64(rng.below(3000)) : Int64(bitPattern: rng.next()) & ~0xFFFF
            switch rng.below(10) {
            case 0..<4:
                let p = pointers[rng.below(pointers.count)]
                table.insert(key, p)
                model[key] = p
            case 4..<6:
                let (got, created) = table.findOrInsert(key) { pointers[0] }
                if let existing = model[key] { #expect(!created && got == existing) } else { #expect(created && got == pointers[0]); model[key] = pointers[0] }
            case 6..<9:
                // Remove only when the value matches, as deinit does.
                let p = pointers[rng.below(pointers.count)]
                table.remove(key, ifValue: p)
                if model[key] == p { model[key] = nil }
            default:
                // Bulk removal, to exercise shrinking.
                if step % 50_000 == 9 { for k in Array(model.keys) { table.remove(k, ifValue: nil); model[k] = nil } }
            }
            if step % 997 == 0 {
                #expect(table.count == model.count)
                for (k, v) in model.prefix(50) { #expect(table.find(k) == v) }
            }
            #expect(table.find(key) == model[key])
        }
        #expect(Set(table.allValues().map { Int(bitPattern: $0) }) == Set(model.values.map { Int(bitPattern: $0) }))
    }
}
