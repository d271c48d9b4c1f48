import BatchStore
@testable import Browser
import Foundation
import GRDB
import Testing
import TestSupport

/// `F` over a large result shows first figures at once: the values of an even sample of its rows,
/// counts scaled and marked ≈, replaced by SQLite's exact GROUP BY when it ends (or taken away
/// with the count when Esc cancels it).
@Suite("Frequency sheet: first figures from a sample")
struct FrequencyPreviewTests {
    static let rows = 300_000

    /// A runner over `path` with `n` open, and the state that opened it, on column v.
    func runner(_ path: String) throws -> (EffectRunner, BrowserState) {
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let runner = EffectRunner(data: BrowserData(context: context), options: BrowserOptions(), environment: .live)
        var state = BrowserState(width: 80, height: 12, databaseName: "n.sqlite")
        for action in runner.run(.effect(.open(table: "n", filter: "", sort: nil)), state: state, cancel: CancelFlag(), report: { _ in }) {
            _ = state.reduce(action)
        }
        _ = state.reduce(.key(.char("l")))
        #expect(state.count == Self.rows && state.currentColumnName == "v")
        return (runner, state)
    }

    /// The sheet's first rows as a plain Swift model of the sample gives them: the sample's
    /// positions, their rows' v (id % 1000 for id = position + 1), counted, most frequent first.
    func modelPreview(first: Int) -> [(value: Int, count: Int)] {
        var counts: [Int: Int] = [:]
        for p in ResultRows.samplePositions(EffectRunner.summarySample, of: Self.rows) { counts[(p + 1) % 1000, default: 0] += 1 }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(first).map { ($0.key, $0.value) }
    }

    @Test("F on 300,000 rows: the first action is the sample's sheet (its rows the model's, scaled and marked ≈), keys but Esc wait, then the exact counts replace it in place")
    func previewThenExact() throws {
        let dir = TempDir()
        let path = try makeIndexedNumbers(dir, count: Self.rows)
        var (runner, state) = try runner(path)
        let effects = state.reduce(.key(.char("F"))).filter { if case .loadWindow = $0 { return false } else { return true } }
        guard effects.count == 1, case .frequency = effects[0] else { Issue.record("F gave \(effects)"); return }
        var reported: [Action] = []
        var screenAtPreview: [String] = []
        var keyDuringCount: [Effect]?
        let final = runner.run(.effect(effects[0]), state: state, cancel: CancelFlag()) { action in
            reported.append(action)
            _ = state.reduce(action)
            if case .frequencyPreview = action {
                screenAtPreview = render(state, colors: false).lines
                keyDuringCount = state.reduce(.key(.char("j")))
            }
        }
        let previews = reported.compactMap { action -> (Int, Int, Int, [RowSnapshot])? in
            if case .frequencyPreview(_, let values, let total, let sampled, let rows) = action { return (values, total, sampled, rows) }
            return nil
        }
        #expect(previews.count == 1)
        guard let (values, total, sampled, rows) = previews.first else { return }
        #expect(total == Self.rows && sampled == EffectRunner.summarySample && values <= 1000)
        let model = modelPreview(first: EffectRunner.previewRowCount)
        #expect(rows.count == model.count)
        for (row, want) in zip(rows, model) {
            let scaled = Int((Double(want.count) * Double(Self.rows) / Double(sampled)).rounded())
            #expect(row.values[0] == .text(String(want.value)) && row.values[1] == .text("≈ " + group(scaled)), "\(row.values) vs \(want)")
            #expect(row.values[2] == .text("≈ " + String(format: "%.2f%%", Double(want.count) * 100 / Double(sampled))))
        }
        // On screen at once: the sample's rows, ≈ marked, the message saying what they are; a key
        // other than a cancel does nothing while the count runs.
        #expect(screenAtPreview[1].contains("≈ ") && screenAtPreview.dropLast().last?.contains("≥ \(group(values)) values in 10,000 sampled rows") == true,
                "\(screenAtPreview)")
        #expect(screenAtPreview.last?.hasPrefix("≈ figures of an even sample of 10,000 rows while SQLite counts all 300,000 rows") == true, "\(screenAtPreview)")
        #expect(keyDuringCount == [])

        // The exact counts replace the sample's sheet where it stands (one sheet, not two).
        var after: [Effect] = []
        for action in final { after += state.reduce(action) }
        #expect(state.frequencySheet?.sampledFrom == nil && state.frequencySheet?.total == Self.rows)
        #expect(state.count == 1000 && state.sheetDepth == 1 && state.running == nil)
        #expect(state.message?.hasPrefix("1,000 distinct values of v in 300,000 rows, counted by SQLite in ") == true, "\(state.message ?? "")")
        // The sample's rows are dropped: the exact ones are asked for, and they are SQLite's.
        #expect(after == [.loadWindow(state.visibleRows)] && state.window.isEmpty)
        for action in runner.run(.effect(.loadWindow(state.visibleRows)), state: state, cancel: CancelFlag(), report: { _ in }) { _ = state.reduce(action) }
        #expect(state.window.first?.values.prefix(2) == [.text("0"), .text("300")], "\(state.window.first?.values ?? [])")
    }

    @Test("Esc while the exact count runs takes the sample's sheet away with it: the table as it was")
    func cancelAfterPreview() throws {
        let dir = TempDir()
        let path = try makeIndexedNumbers(dir, count: Self.rows)
        var (runner, state) = try runner(path)
        let cursor = state.cursorRow
        let effects = state.reduce(.key(.char("F"))).filter { if case .loadWindow = $0 { return false } else { return true } }
        let cancel = CancelFlag()
        let final = runner.run(.effect(effects[0]), state: state, cancel: cancel) { action in
            _ = state.reduce(action)
            if case .frequencyPreview = action {
                #expect(state.frequencySheet?.sampledFrom == 10_000)
                #expect(state.reduce(.key(.escape)) == [.cancel])
                cancel.set()
            }
        }
        for action in final { _ = state.reduce(action) }
        #expect(state.frequencySheet == nil && state.sheetDepth == 0 && state.table == "n" && state.count == Self.rows && state.cursorRow == cursor)
        #expect(state.message == "counting v cancelled: still on n" && state.running == nil)
    }

    @Test("below 100,001 rows there is no sample: the exact sheet comes first")
    func smallResultNoPreview() throws {
        let dir = TempDir()
        let path = try makeIndexedNumbers(dir, count: 100_000)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let runner = EffectRunner(data: BrowserData(context: context), options: BrowserOptions(), environment: .live)
        var state = BrowserState(width: 80, height: 12)
        for action in runner.run(.effect(.open(table: "n", filter: "", sort: nil)), state: state, cancel: CancelFlag(), report: { _ in }) { _ = state.reduce(action) }
        _ = state.reduce(.key(.char("l")))
        let effects = state.reduce(.key(.char("F"))).filter { if case .loadWindow = $0 { return false } else { return true } }
        var previews = 0
        _ = runner.run(.effect(effects[0]), state: state, cancel: CancelFlag()) { if case .frequencyPreview = $0 { previews += 1 } }
        #expect(previews == 0)
    }

    @Test("reducer: an exact count that fails after the sample's sheet takes the sheet away with it; the table is as it was and keys act again")
    func failedAfterPreview() {
        var s = BrowserState(width: 80, height: 12, databaseName: "n.sqlite")
        _ = s.reduce(.opened(table: "n", columns: ["id", "v"], filter: "", sort: nil, count: 300_000, cursor: 7, readOnly: nil, message: nil, result: 1))
        _ = s.reduce(.key(.char("l")))
        _ = s.reduce(.key(.char("F")))
        _ = s.reduce(.started(.counting))
        let rows = (0..<3).map { RowSnapshot(id: nil, values: [.text("\($0)"), .text("≈ 1"), .text("≈ 1%"), .text("█")], exists: true) }
        _ = s.reduce(.frequencyPreview(column: "v", values: 3, total: 300_000, sampled: 10_000, rows: rows))
        #expect(s.frequencySheet?.sampledFrom == 10_000 && s.sheetDepth == 1 && s.running == .counting)
        _ = s.reduce(.failed("database or disk is full"))
        #expect(s.frequencySheet == nil && s.sheetDepth == 0 && s.table == "n" && s.count == 300_000 && s.cursorRow == 7 && s.currentColumnName == "v")
        #expect(s.running == nil && s.messageIsError && s.message == "database or disk is full")
        _ = s.reduce(.key(.char("j")))
        #expect(s.cursorRow == 8, "keys act again")
    }
}
