import BatchStore
@testable import Browser
import Foundation
import GRDB
import TerminalCore
import Testing
import TestSupport

/// D, U, u and r show a working line and Esc (Ctrl-C, q) cancels them: the reducer's side (pure),
/// the runner's and BrowserData's on real files (cancelled from the progress callback or at the
/// start, never after a sleep), and a whole session.
@Suite("Cancelling D, U, u and r", .serialized, .tags(.slow), .timeLimit(slowTestLimit))
struct EditCancelTests {
    // MARK: The reducer

    /// A state as if `count` rows of `t` were open (result 7), the visible window loaded.
    func opened(count: Int) -> BrowserState {
        var s = BrowserState(width: 80, height: 10)
        _ = s.reduce(.opened(table: "t", columns: ["a", "b"], filter: "", sort: nil, count: count, cursor: 0, readOnly: nil, message: nil, result: 7))
        let rows = s.visibleRows.map { RowSnapshot(id: nil, values: [.text("\($0)"), .null], exists: true) }
        _ = s.reduce(.windowLoaded(start: s.visibleRows.lowerBound, rows: rows))
        return s
    }

    @Test("D: the count's working line ticks; Esc cancels it, nothing else changes, and keys act again")
    func cancelTheCount() {
        var s = opened(count: 2_500_000)
        let target = EditTarget(result: 7, table: "t", marked: nil)
        #expect(s.reduce(.key(.char("D"))) == [.countDelete(target)])
        #expect(s.message == "counting the rows to delete from t: 0.0 s (Esc cancels and changes nothing)")
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.editProgress(seconds: 1.44))
        #expect(s.message == "counting the rows to delete from t: 1.4 s (Esc cancels and changes nothing)")
        #expect(render(s).lines[9].trimmingCharacters(in: .whitespaces) == "counting the rows to delete from t: 1.4 s (Esc cancels and changes nothing)")
        #expect(s.reduce(.key(.char("j"))) == [] && s.cursorRow == 0, "other keys wait")
        #expect(s.reduce(.key(.alt("q"))) == [.cancel], "Esc read together with the next key is still a cancel")
        _ = s.reduce(.editCancelled)
        #expect(s.running == nil && s.editing == nil && s.mode == .grid)
        #expect(s.message == "delete cancelled: nothing was changed")
        #expect(s.count == 2_500_000 && s.table == "t")
        _ = s.reduce(.key(.char("j")))
        #expect(s.cursorRow == 1)
    }

    @Test("y: deleting N rows ticks with the confirmed count; Ctrl-C cancels without quitting; the marks stay")
    func cancelTheDelete() throws {
        var s = opened(count: 10)
        let dir = TempDir()
        let entity = try PersistentStore(path: try makeNumbers(dir, count: 1)).entity(named: "n")
        let id = ObjectID(entity: entity, key: .rowid(1))
        _ = s.reduce(.windowLoaded(start: 0, rows: [RowSnapshot(id: id, values: [.text("0"), .null], exists: true)]))
        _ = s.reduce(.key(.char("v")))
        #expect(s.marked == [id])
        let target = EditTarget(result: 7, table: "t", marked: [id])
        _ = s.reduce(.countedForDelete(1, target: target))
        #expect(s.mode == .confirm(.delete(rows: 1, target: target)))
        _ = s.reduce(.countedForDelete(1, target: target))
        #expect(s.reduce(.key(.char("y"))).first == .runDelete(target))
        #expect(s.message == "deleting 1 row from t: 0.0 s (Esc cancels and changes nothing)")
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.editProgress(seconds: 12.25))
        #expect(s.message == "deleting 1 row from t: 12.3 s (Esc cancels and changes nothing)")
        #expect(s.reduce(.key(.ctrl("c"))) == [.cancel])
        _ = s.reduce(.editCancelled)
        #expect(!s.quit, "Ctrl-C cancels the edit, it does not quit")
        #expect(s.message == "delete cancelled: nothing was changed")
        #expect(s.marked == [id] && s.count == 10, "the marks and the result are as they were")
    }

    @Test("the confirmed count is in the working line, with separators; U's count and update too")
    func updateLines() {
        var s = opened(count: 2_500_000)
        let target = EditTarget(result: 7, table: "t", marked: nil)
        _ = s.reduce(.key(.char("U")))
        for c in "a = 1" { _ = s.reduce(.key(.char(c))) }
        #expect(s.reduce(.key(.enter)) == [.countUpdate(assignments: "a = 1", target: target), .saveHistory(kind: .assignments, text: "a = 1")])
        #expect(s.message == "counting the rows to update in t: 0.0 s (Esc cancels and changes nothing)")
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.countedForUpdate(rows: 2_500_000, assignments: "a = 1", target: target))
        #expect(s.running == nil && s.mode == .confirm(.update(rows: 2_500_000, assignments: "a = 1", target: target)))
        #expect(s.reduce(.key(.char("y"))) == [.runUpdate(assignments: "a = 1", target: target)])
        #expect(s.message == "updating 2,500,000 rows of t: 0.0 s (Esc cancels and changes nothing)")
        _ = s.reduce(.started(.editing))
        #expect(s.reduce(.key(.char("q"))) == [.cancel])
        _ = s.reduce(.editCancelled)
        #expect(!s.quit && s.message == "update cancelled: nothing was changed")

        var d = opened(count: 2_500_000)
        _ = d.reduce(.countedForDelete(2_500_000, target: target))
        _ = d.reduce(.key(.char("y")))
        #expect(d.message == "deleting 2,500,000 rows from t: 0.0 s (Esc cancels and changes nothing)")
    }

    @Test("Esc after the count finished but before its answer: no question, nothing changed")
    func escBeforeTheQuestion() {
        var s = opened(count: 50)
        let target = EditTarget(result: 7, table: "t", marked: nil)
        _ = s.reduce(.key(.char("D")))
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.countedForDelete(50, target: target))
        #expect(s.mode == .grid && s.running == nil)
        #expect(s.message == "delete cancelled: nothing was changed")
    }

    @Test("Esc after the commit: the edit stands, the message says it was too late; the next edit starts clean")
    func tooLate() {
        var s = opened(count: 50)
        let target = EditTarget(result: 7, table: "t", marked: nil)
        _ = s.reduce(.countedForDelete(50, target: target))
        _ = s.reduce(.key(.char("y")))
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.edited(count: 0, cursor: 0, message: "deleted 50 rows from t; u undoes (4,667 ms)"))
        #expect(s.message == "too late to cancel: deleted 50 rows from t; u undoes (4,667 ms)")
        #expect(s.count == 0 && s.running == nil && s.editing == nil)
        // The cancel does not outlive its edit: the next one ends as usual.
        _ = s.reduce(.key(.char("u")))
        _ = s.reduce(.countedForUndo(UndoSummary(kind: .delete, table: "t", rows: 50)))
        _ = s.reduce(.key(.char("y")))
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.edited(count: 50, cursor: 0, message: "undo: restored 50 deleted rows of t (3 ms)"))
        #expect(s.message == "undo: restored 50 deleted rows of t (3 ms)")
    }

    @Test("u and r: their working lines and cancel messages")
    func undoAndReload() {
        var s = opened(count: 50)
        // u reads what it would take back, asks, and only y undoes.
        #expect(s.reduce(.key(.char("u"))) == [.countUndo])
        #expect(s.message == "reading what the last edit changed: 0.0 s (Esc cancels and changes nothing)")
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.countedForUndo(UndoSummary(kind: .update(columns: ["a", "b"]), table: "t", rows: 3)))
        #expect(s.running == nil && s.mode == .confirm(.undo(UndoSummary(kind: .update(columns: ["a", "b"]), table: "t", rows: 3))))
        #expect(render(s, colors: false).lines.last?.hasPrefix("Undo the update of 3 rows of t: give a, b their old values? y/n") == true)
        #expect(s.reduce(.key(.char("n"))) == [] && s.message == "cancelled: nothing was changed")
        _ = s.reduce(.key(.char("u")))
        _ = s.reduce(.countedForUndo(UndoSummary(kind: .delete, table: "t", rows: 1)))
        #expect(render(s, colors: false).lines.last?.hasPrefix("Undo the delete of 1 row from t: put it back? y/n") == true)
        #expect(s.reduce(.key(.char("y"))) == [.undo])
        #expect(s.message == "undoing the last edit: 0.0 s (Esc cancels and changes nothing)")
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.editCancelled)
        #expect(s.message == "undo cancelled: nothing was changed")
        // Esc while the journal is read: nothing is asked.
        _ = s.reduce(.key(.char("u")))
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.countedForUndo(UndoSummary(kind: .insert, table: "t", rows: 2)))
        #expect(s.mode == .grid && s.message == "undo cancelled: nothing was changed")
        #expect(s.reduce(.key(.char("r"))) == [.reload])
        #expect(s.message == "reloading t: 0.0 s (Esc cancels and keeps the result as it was)")
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.editCancelled)
        #expect(s.message == "reload cancelled: still showing the result as it was")
        #expect(s.count == 50 && s.running == nil)
        // A failure ends the working line too.
        _ = s.reduce(.key(.char("u")))
        _ = s.reduce(.started(.editing))
        _ = s.reduce(.failed("nothing to undo"))
        #expect(s.running == nil && s.editing == nil && s.message == "nothing to undo")
    }

    // MARK: BrowserData and the runner, on real files

    static let rows = 300_000

    func makeFile(_ dir: TempDir) throws -> String { try makeIndexedNumbers(dir, count: Self.rows) }

    func checksum(_ path: String) throws -> String { try rowChecksum(path) }

    @Test("BrowserData: a delete, an update of marked rows and an undo, each cancelled in its transaction, change nothing")
    func browserDataCancels() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let data = BrowserData(context: context)
        let result = try data.open(FetchRequest(entityName: "n", predicate: try FetchPredicate("v < 600")), residentBatches: 8, firstRows: { _ in }, progress: { _ in .proceed })
        let original = try checksum(path)
        let temps = try context.temporaryTableNames()
        var phases: [EditProgress.Phase] = []
        let cancelWhileWriting: (EditProgress) -> IDFetchDecision = { p in phases.append(p.phase); return p.phase == .writing ? .cancel : .proceed }

        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            _ = try data.interruptible(cancelWhileWriting) { try data.delete(in: result, table: "n", marked: nil) }
        }
        #expect(phases.last == .writing)
        #expect(try checksum(path) == original && !data.canUndo && context.temporaryTableNames() == temps)

        // Marked rows (their keys go through a temp table of their own): an update.
        let marked = (1...20_000).map { ObjectID(entity: result.entity, key: .rowid(Int64($0))) }
        let assignments = try UpdateExpression.parseAssignments("name = name || '!', v = v * 2")
        phases = []
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            _ = try data.interruptible(cancelWhileWriting) { try data.update(assignments, in: result, table: "n", marked: marked) }
        }
        #expect(phases.last == .writing)
        #expect(try checksum(path) == original && !data.canUndo && context.temporaryTableNames() == temps)

        // An edit that runs, then its undo cancelled: the edit stays, undo still works.
        let (deleted, note) = try data.interruptible({ _ in .proceed }) { try data.delete(in: result, table: "n", marked: nil) }
        #expect(deleted.count == Self.rows * 3 / 5 && note == "; u undoes")
        data.merge(deleted.changes ?? ChangeSet())
        let afterDelete = try checksum(path)
        let tempsWithJournal = try context.temporaryTableNames()
        phases = []
        #expect(throws: BatchStoreError(.cancelled, "cancelled: nothing was changed")) {
            _ = try data.interruptible(cancelWhileWriting) { try data.undo() }
        }
        #expect(phases.last == .writing)
        #expect(try checksum(path) == afterDelete && data.canUndo && context.temporaryTableNames() == tempsWithJournal)
        _ = try data.undo()
        #expect(try checksum(path) == original && !data.canUndo)
    }

    /// A runner over `path` with `n` open, and the state that opened it.
    func runner(_ path: String) throws -> (EffectRunner, BrowserState) {
        let context = try ManagedObjectContext(store: try PersistentStore(path: path))
        let runner = EffectRunner(data: BrowserData(context: context), options: BrowserOptions(), environment: .live)
        var state = BrowserState(width: 80, height: 12)
        for action in runner.run(.effect(.open(table: "n", filter: "", sort: nil)), state: state, cancel: CancelFlag(), report: { _ in }) {
            _ = state.reduce(action)
        }
        #expect(state.resultID != nil && state.count > 0)
        return (runner, state)
    }

    @Test("the runner: a cancel at the start of D's count, of the delete, of u and of r gives .editCancelled and changes nothing")
    func runnerCancels() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        var (runner, state) = try runner(path)
        let original = try checksum(path)
        guard let target = state.editTarget else { Issue.record("no target"); return }

        /// Runs `effect` with the cancel set as soon as the runner says it started.
        func cancelled(_ effect: Effect) -> [Action] {
            let cancel = CancelFlag()
            var started = false
            let actions = runner.run(.effect(effect), state: state, cancel: cancel) { action in
                if case .started(.editing) = action { started = true; cancel.set() }
            }
            #expect(started)
            return actions
        }
        #expect(cancelled(.countDelete(target)).map { "\($0)" } == ["editCancelled"])
        #expect(cancelled(.runDelete(target)).map { "\($0)" } == ["editCancelled"])
        #expect(try checksum(path) == original)
        #expect(cancelled(.countUpdate(assignments: "v = 0", target: target)).map { "\($0)" } == ["editCancelled"])
        #expect(cancelled(.runUpdate(assignments: "v = 0", target: target)).map { "\($0)" } == ["editCancelled"])
        #expect(try checksum(path) == original)

        // r cancelled: the result keeps its count and its ID table.
        #expect(cancelled(.reload).map { "\($0)" } == ["editCancelled"])
        #expect(runner.collection?.count == Self.rows)
        #expect(try runner.collection?.objectID(at: Self.rows - 1) != nil)

        // A real delete of every row, then u cancelled: the rows stay deleted and u still undoes them.
        for action in runner.run(.effect(.runDelete(target)), state: state, cancel: CancelFlag(), report: { _ in }) { _ = state.reduce(action) }
        #expect(state.count == 0 && state.message?.hasPrefix("deleted 300,000 rows from n; u undoes (") == true, "\(state.message ?? "")")
        let afterDelete = try checksum(path)
        #expect(afterDelete.hasPrefix("0 rows"))
        #expect(cancelled(.undo).map { "\($0)" } == ["editCancelled"])
        #expect(try checksum(path) == afterDelete && runner.data.canUndo)
        for action in runner.run(.effect(.undo), state: state, cancel: CancelFlag(), report: { _ in }) { _ = state.reduce(action) }
        #expect(try checksum(path) == original && state.count == Self.rows)
        #expect(state.message?.hasPrefix("undo: restored 300,000 deleted rows of n (") == true, "\(state.message ?? "")")
    }

    @Test("a frequency sheet: D of every value's rows cancelled changes nothing; Esc while the sheet's result is read again after a D leaves the D standing and every sheet below out of date")
    func frequencySheetCancels() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        var (runner, state) = try runner(path)
        let original = try checksum(path)
        /// Runs `effects` and each action they give, in order, as the session does.
        func run(_ effects: [Effect], cancelOn: ((Action) -> Bool)? = nil) -> [Action] {
            let cancel = CancelFlag()
            var all: [Action] = []
            for effect in effects where effect != .cancel {
                if case .loadWindow = effect { continue }
                let actions = runner.run(.effect(effect), state: state, cancel: cancel) { action in
                    all.append(action)
                    _ = state.reduce(action)
                    if cancelOn?(action) == true { cancel.set() }
                }
                for action in actions { all.append(action); _ = state.reduce(action) }
            }
            return all
        }
        _ = state.reduce(.key(.char("l")))
        _ = run(state.reduce(.key(.char("F"))))
        #expect(state.frequencySheet?.column == "v" && state.count == 1000 && state.frequencySheet?.total == Self.rows)

        // V, D: 300,000 rows; y, and Esc as the delete starts: nothing changed, the sheet as it was.
        _ = state.reduce(.key(.char("V")))
        _ = run(state.reduce(.key(.char("D"))))
        guard case .confirm(.delete(let n, _, _)) = state.mode else { Issue.record("D asked nothing: \(state.message ?? "")"); return }
        #expect(n == Self.rows)
        let actions = run(state.reduce(.key(.char("y")))) { action in
            if case .started(.editing) = action { return true } else { return false }
        }
        #expect(actions.contains { if case .editCancelled = $0 { return true } else { return false } })
        #expect(state.message == "delete cancelled: nothing was changed" && state.running == nil && state.editing == nil)
        #expect(try checksum(path) == original && !runner.data.canUndo)
        #expect(state.frequencySheet != nil && state.count == 1000 && !state.stale)

        // One value (300 rows): D y runs; Esc as the sheet's result is read again. The delete stands.
        _ = state.reduce(.key(.char("V")))
        _ = state.reduce(.key(.char("g")))
        _ = run(state.reduce(.key(.char("D"))))
        guard case .confirm(.delete(300, _, _)) = state.mode else { Issue.record("D asked \(state.mode): \(state.message ?? "")"); return }
        _ = run(state.reduce(.key(.char("y")))) { action in
            if case .started(.counting) = action { return true } else { return false }
        }
        let left = try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") }
        #expect(left == Self.rows - 300)
        #expect(state.message?.hasPrefix("deleted 300 rows from n (1 value of v); u undoes; reading n again was cancelled: this sheet's figures are from before; r counts again") == true,
                "\(state.message ?? "")")
        #expect(state.running == nil && state.editing == nil && state.stale && state.frequencySheet != nil)
        #expect(runner.data.canUndo)
        // r counts again: 999 values over the rows left.
        _ = run(state.reduce(.key(.char("r"))))
        #expect(state.count == 999 && state.frequencySheet?.total == Self.rows - 300 && !state.stale, "\(state.message ?? "")")
        // Esc: the table below reads itself again on the way back (it was out of date), and has the rows left.
        _ = run(state.reduce(.key(.escape)))
        #expect(state.frequencySheet == nil && state.count == Self.rows - 300, "\(state.message ?? "")")
    }

    @Test("a session: Esc cancels r on a frequency sheet, and the next r counts again (the cancel does not outlive its work); a cancelled recount clears the sheet's marks")
    func recountAfterCancel() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let (b, term) = try makeBrowser(path, width: 100, height: 12)
        b.send(keys("lF"))
        #expect(b.state.frequencySheet?.column == "v" && b.state.count == 1000 && b.state.running == nil)
        b.send(keys("v"))
        #expect(b.state.currentMarks != nil)
        // Esc read by the session as soon as r's work has started.
        term.keys.append(.escape)
        b.send(.char("r"))
        #expect(b.state.message?.contains("again was cancelled") == true, "\(b.state.message ?? "")")
        #expect(b.state.stale && b.state.currentMarks == nil)
        b.send(.char("r"))
        #expect(b.state.message?.hasPrefix("v counted again: 1,000 values in 300,000 rows") == true, "\(b.state.message ?? "")")
        #expect(!b.state.stale && b.state.running == nil)
        // And after an Esc that cancelled a D on the sheet, r still counts.
        b.send(keys("V"))
        b.send(.char("D"))
        term.keys.append(.escape)
        b.send(.char("y"))
        #expect(b.state.message == "delete cancelled: nothing was changed", "\(b.state.message ?? "")")
        b.send(.char("r"))
        #expect(b.state.message?.hasPrefix("v counted again: 1,000 values in 300,000 rows") == true, "\(b.state.message ?? "")")
    }

    @Test("the runner: a cancel that comes when nothing is left to interrupt (a small edit) is too late: the edit stands, and the message says so")
    func runnerTooLate() throws {
        let dir = TempDir()
        let path = try makeNumbers(dir, count: 100)
        var (runner, state) = try runner(path)
        guard let target = state.editTarget else { Issue.record("no target"); return }
        _ = state.reduce(.countedForDelete(100, target: target))
        #expect(state.reduce(.key(.char("y"))).first == .runDelete(target))
        // Esc is read as the delete starts; 100 rows give SQLite no progress tick to stop at.
        let cancel = CancelFlag()
        let actions = runner.run(.effect(.runDelete(target)), state: state, cancel: cancel) { action in
            _ = state.reduce(action)
            if case .started(.editing) = action { #expect(state.reduce(.key(.escape)) == [.cancel]); cancel.set() }
        }
        for action in actions { _ = state.reduce(action) }
        #expect(state.message?.hasPrefix("too late to cancel: deleted 100 rows from n; u undoes (") == true, "\(state.message ?? "")")
        #expect(state.count == 0 && state.running == nil)
        #expect(try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") } == 0)
        #expect(runner.data.canUndo)
    }

    @Test("a session: Esc read while D runs on 300,000 rows; cancelled or too late, the screen agrees with the file")
    func sessionRace() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let (b, term) = try makeBrowser(path, width: 100, height: 12)
        #expect(b.state.count == Self.rows)
        b.send(.char("D"))
        #expect(term.text[11] == "Delete all 300,000 rows of this result (nothing is marked) from n? y/n")
        // Read by the session as soon as the delete has started (keys are read while work runs).
        term.keys.append(.escape)
        b.send(.char("y"))
        let inFile = try direct(path) { try Int.fetchOne($0, sql: "SELECT count(*) FROM n") }
        let message = b.state.message ?? ""
        #expect(b.state.running == nil && b.state.editing == nil)
        #expect(b.state.count == inFile, "the result on screen is the file's: \(message)")
        if inFile == Self.rows {
            #expect(message == "delete cancelled: nothing was changed")
            b.send(.char("u"))
            #expect(b.state.message == "nothing to undo")
        } else {
            #expect(inFile == 0)
            // Too late (the commit came first), or the Esc came after the delete ended: the delete stands.
            #expect(message.hasPrefix(term.keys.isEmpty ? "too late to cancel: deleted 300,000 rows from n; u undoes (" : "deleted 300,000 rows from n; u undoes ("), "\(message)")
        }
    }
}
