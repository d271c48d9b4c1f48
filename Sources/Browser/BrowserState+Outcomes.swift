import BatchStore
import Foundation
import TerminalCore

extension BrowserState {
    /// Settles what an effect reported (sheets counted, edits counted or done, files changed):
    /// the state it leaves and what the status line says. Nothing is asked of the worker here.
    mutating func settle(_ action: Action) {
        switch action {
        case .frequencyOpened(let column, let values, let total, let result, let seconds):
            pushFrequencySheet(column: column, values: values, total: total, result: result, seconds: seconds)
        case .frequencyPreview(let column, let values, let total, let sampled, let rows):
            pushFrequencyPreview(column: column, values: values, total: total, sampled: sampled, rows: rows)
        case .frequencyProgress(let column, let seconds, let n):
            let note = frequencySheet?.sampledFrom.map { "; ≈ figures are of an even sample of \(group($0)) rows until then" } ?? ""
            // A server does not say how many rows a statement has read so far.
            let read = engineTraits.reportsRowsRead ? ", \(rows(n)) read" : ""
            say("counting the values of \(column): \(String(format1: seconds)) s\(read)\(note) (Esc cancels)")
        case .frequencyBinned(let width, let values, let total, let result, let seconds):
            binnedFrequencySheet(width: width, values: values, total: total, result: result, seconds: seconds)
        case .frequencyCancelled(let column):
            running = nil
            // A sample's sheet goes with the count it stood in for.
            if frequencySheet?.sampledFrom != nil, let parent = sheets.popLast() {
                parent.restore(into: &self)
                mode = .grid
                scrollToCursor()
            }
            say("counting \(column) cancelled: still on \(table ?? "the table")")
        case .summaryRow(let index, let figures, let result):
            fillSummary(index: index, with: figures, result: result)
        case .summaryProgress(let index, let n, let column, let seconds):
            let sampled = summarySheet?.rows.contains { $0?.sampledFrom != nil } ?? false
            let note = sampled ? "; ≈ figures are of an even sample of \(group(summarySheet?.rows.lazy.compactMap { $0?.sampledFrom == nil ? nil : $0?.rows }.first ?? 0)) rows until then" : ""
            say("summarising \(column), column \(group(index + 1)) of \(group(n)): \(String(format1: seconds)) s\(note) (Esc cancels)")
        case .summaryEnded(let done, let n, let seconds, let cancelled):
            running = nil
            if cancelled {
                say("summary cancelled after \(group(done)) of \(counted(n, "column")): Esc goes back")
            } else {
                say("\(counted(n, "column")) summarised by \(engineName) in \(milliseconds(seconds)); Enter goes to a column, F counts its values, Esc goes back")
            }
        case .editProgress(let seconds):
            if let editing { say(editing.line(seconds: seconds)) }
        case .editCancelled:
            submitted = nil
            let step = endEdit()
            if case .reloading = step {
                say("reload cancelled: still showing the result as it was")
            } else {
                say("\(step?.noun ?? "edit") cancelled: nothing was changed")
            }
        case .countedForDelete(let n, let target, let noUndo):
            // Esc came once the count was done: ask nothing.
            if endEdit(cancelled: "delete") { break }
            // A count for anything but what D would act on now is stale: ask nothing.
            guard target == editTarget else { message = nil; break }
            message = nil
            mode = .confirm(.delete(rows: n, target: target, noUndo: noUndo))
        case .countedForUpdate(let n, let text, let target, let noUndo, let preview):
            submitted = nil
            if endEdit(cancelled: "update") { break }
            // e's target is its cell, asked for on this result; others what U would act on now.
            guard target.cell.map({ $0.result == resultID }) ?? (target == editTarget) else { message = nil; break }
            cellEdit = nil
            message = nil
            if let cell = target.cell, n == 0 {
                // The row went (another program deleted it, or it left the result): nothing to ask.
                say("row \(group(cell.row + 1)) is no longer in \(target.table): nothing was changed; r reloads")
                break
            }
            mode = .confirm(.update(rows: n, assignments: text, target: target, noUndo: noUndo, preview: preview))
        case .cellLoaded(let cell):
            // Only while that row of that result is still the cursor's and nothing else was asked.
            guard mode == .grid, cell.result == resultID, cell.row == cursorRow, snapshot(cursorRow)?.id == cell.id else { break }
            cellEdit = cell
            message = nil
            openPrompt(.cellEdit, text: cell.old)
        case .countedForUndo(let summary):
            if endEdit(cancelled: "undo") { break }
            // Asked only from a grid (a key since then that left it: ask nothing).
            guard mode == .grid else { message = nil; break }
            message = nil
            mode = .confirm(.undo(summary))
        case .parentRefreshed(let n, let cursor, let kept, let edited):
            // The result below was read as the file is now: another writer's change is in it.
            fileChanged = false
            // An edit from this sheet committed (a cancel now is too late: the runner says so).
            if editing != nil { endEdit() }
            parentRefreshed(count: n, cursor: cursor, marks: kept, edited: edited)
        case .frequencyRecounted(let values, let total, let result, let cursor, let msg):
            if editing != nil { endEdit() }
            frequencyRecounted(values: values, total: total, result: result, cursor: cursor, message: msg)
        case .recountCancelled(let msg, let parentStale):
            if editing != nil { endEdit() }
            running = nil
            stale = true
            // Marks were made on the counts before the edit: they do not carry over to the next one.
            marks = nil
            if parentStale { for i in sheets.indices { sheets[i].stale = true } }
            mode = .grid
            say(msg)
        case .edited(let n, let cursor, let msg, let kept, let fileEdited):
            // Esc came after the edit committed: it stands, and the message says so.
            let tooLate = editCancelRequested && editing != nil
            endEdit()
            // An edit may have changed the rows of every sheet below: each is read again on return.
            if fileEdited { for i in sheets.indices { sheets[i].stale = true } }
            stale = false
            count = n
            cursorRow = min(max(0, cursor), max(0, n - 1))
            // An edit of marked rows (or of the result) clears the marks: its rows are done with.
            // A reload, and a cell edit (one row, whatever is marked), keep those still in the result.
            var note: String?
            if kept == nil { marks = nil } else if let resultID { note = rebaseMarks(to: kept, result: resultID) }
            windowValid = false
            mode = .grid
            say((tooLate ? "too late to cancel: " : "") + msg + (note.map { "; " + $0 } ?? ""))
            scrollToCursor()
        case .failed(let msg):
            fail(msg, column: nil)
        case .failedAt(let msg, let column):
            fail(msg, column: column)
        case .historyLoaded(let loaded, let problem):
            history = loaded
            if let problem { say(problem, error: true) }
        case .historyNotSaved(let why):
            // Said once; an error on screen (what the prompt ran failed) is not covered by it.
            if !historySaveFailed, !(messageIsError && message != nil) {
                say("the prompt history was not saved: \(why)", error: true)
                historySaveFailed = true
            }
        case .info(let msg):
            if editing != nil { endEdit() }
            say(msg)
        case .memorySampled(let m):
            memory = m
            rssHistory.append(m.rss)
            if rssHistory.count > 240 { rssHistory.removeFirst(rssHistory.count - 240) }
        case .eagerProgress(let n, let done):
            eagerLoaded = n
            eagerActive = !done
            if done { say("\(n == 1 ? "the 1 row is" : "all \(rows(n)) are") in a Swift array now: see RSS; M goes back to batches") }
        case .eagerStopped(let msg):
            eagerLoaded = nil
            eagerActive = false
            say(msg)
        case .writeProgress(let path, let n, let total, let seconds):
            let percent = total > 0 ? " (\(Int(Double(n) * 100 / Double(total)))%)" : ""
            say("writing \(TerminalText.escapingControlCharacters(path)): \(group(n)) of \(rows(total))\(percent), \(String(format1: seconds)) s (Esc cancels)")
        case .clipboard:
            break
        case .writeEnded(let text, let error):
            running = nil
            say(text, error: error)
            if error { reopenSubmittedPrompt(column: nil) } else { submitted = nil }
        case .fileChanged:
            fileChanged = true
        case .fileGone(let problem):
            fileGone = true
            say("\(problem): the screen shows the old file, edits are refused; q quits", error: true)
        case .fileReloaded:
            fileChanged = false
        default:
            preconditionFailure("reduce(_:) settles only the outcomes this switch names")
        }
    }
}
