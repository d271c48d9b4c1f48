import BatchStore


extension EffectRunner {
    /// The memory panel's figures: the process (from the environment), the context and the result.
    func sampleMemory() -> Action {
        var m = MemorySnapshot()
        m.rss = environment.residentBytes()
        m.peakRSS = environment.peakResidentBytes()
        m.objectsAlive = data.registeredObjectCount
        if let stats = collection?.statistics {
            m.batchesResident = stats.batchesResident
            m.residentLimit = stats.residentBatchLimit
            m.batchesFaulted = stats.batchesFaulted
            m.idStorage = stats.idStorage
            m.idsHeld = stats.idsHeld
            m.idsInSwiftMemory = stats.idsInSwiftMemory + eagerArray.count
            m.lastFaultSeconds = lastFaultSeconds
            m.valueBytesResident = stats.valueBytesResident
        }
        return .memorySampled(m)
    }

    /// `M`: starts copying the result into a Swift array, as `Array(results)` would.
    func startEager() -> [Action] {
        guard let collection else { return [] }
        eagerArray = []
        eagerArray.reserveCapacity(collection.count)
        return [.info("copying \(collection.count == 1 ? "the 1 row" : "all \(rows(collection.count))") into a Swift array, as `Array(results)` would: watch RSS climb (Esc stops)"),
                .eagerProgress(loaded: 0, done: collection.count == 0)]
    }

    /// `M` again (or Esc while copying): drops the array and gives its memory back.
    func stopEager() -> [Action] {
        let n = eagerArray.count
        eagerArray = []
        environment.returnFreeMemory()
        return [sampleMemory(), .eagerStopped("back to batches: the array of \(counted(n, "object")) is gone, and so is its memory")]
    }

    /// Copies the next slice of the result into the eager array.
    /// - Complexity: O(20,000) objects faulted per step.
    func eagerStep(_ state: BrowserState) -> [Action] {
        guard let collection, state.eagerActive else { return [] }
        let start = eagerArray.count
        let end = min(collection.count, start + 20_000)
        timingFaults(of: collection) {
            for i in start..<end {
                if let o = try? collection.object(at: i) { eagerArray.append(o) } else { break }
            }
        }
        return [sampleMemory(), .eagerProgress(loaded: eagerArray.count, done: eagerArray.count >= collection.count || end == start)]
    }
}
