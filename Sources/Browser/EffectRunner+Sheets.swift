import BatchStore
import Foundation

/// A table sheet's result as the data holds it, under its result ID.
struct HeldResult {
    var collection: BrowserResult
    /// `PRAGMA data_version` just before the result was fetched or refreshed (nil: unknown, or an
    /// edit since may have changed its rows): while the file's is the same, the rows its fetch
    /// matches now are its rows, and frequencies and summaries read them with the fetch's WHERE.
    var version: Int?
    /// The frequency sheet over it, if one is open, and that sheet's result ID: edits of its
    /// values aimed at any other are refused.
    var frequencies: ValueFrequencies?
    var frequenciesID: Int?
}

extension EffectRunner {
    /// The table result on screen or under the sheet on screen (``shownID``'s).
    var collection: BrowserResult? { shownID.flatMap { results[$0]?.collection } }
    /// Its ID (``BrowserState/resultID`` of its table sheet).
    var collectionID: Int? { collection == nil ? nil : shownID }
    /// Its data version (see ``HeldResult/version``).
    var collectionVersion: Int? {
        get { shownID.flatMap { results[$0]?.version } }
        set { if let shownID { results[shownID]?.version = newValue } }
    }
    /// The frequency sheet on screen, over ``collection`` (nil: no frequency sheet is open over it).
    var frequencies: ValueFrequencies? {
        get { shownID.flatMap { results[$0]?.frequencies } }
        set { if let shownID { results[shownID]?.frequencies = newValue } }
    }
    /// Its result ID.
    var frequenciesID: Int? {
        get { shownID.flatMap { results[$0]?.frequenciesID } }
        set { if let shownID { results[shownID]?.frequenciesID = newValue } }
    }
}

extension EffectRunner {
    /// `F`: groups the values of `column` over the result on screen (its ID table) in SQLite,
    /// reporting the time so far; a cancel stops the GROUP BY and leaves the table sheet as it was.
    func countFrequencies(of column: String, result: Int, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard let collection, collectionID == result, frequencies == nil else {
            return [.failed("the result changed before F could count it: F again")]
        }
        let clock = environment.now
        let started = clock()
        report(.started(.counting))
        report(.frequencyProgress(column: column, seconds: 0, rows: 0))
        do {
            let rows = rowsToRead()
            // First figures at once: over a large result, the values of an even sample of its rows
            // (milliseconds at any size; the whole GROUP BY takes as long as SQLite's own), shown
            // marked as a sample on the sheet's first screen until the exact counts replace them.
            if collection.count > Self.summarySampleAbove {
                let sample = try collection.frequencies(of: column, rows: .sample(Self.summarySample)) { _ in cancel.isSet ? .cancel : .proceed }
                report(.frequencyPreview(column: sample.attribute, values: sample.count, total: collection.count, sampled: sample.total,
                                         rows: try Self.previewRows(sample, total: collection.count, first: Self.previewRowCount)))
            }
            let counted = try count(column, in: collection, binWidth: nil, rows: rows, started: started, cancel: cancel, report: report)
            frequencies = counted
            resultSerial += 1
            frequenciesID = resultSerial
            log("frequencies of \(column) (\(rows)): \(counted.count) values over \(counted.total) rows in \(counted.seconds)s")
            return [.frequencyOpened(column: counted.attribute, values: counted.count, total: counted.total, result: resultSerial, seconds: clock() - started)]
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.frequencyCancelled(column: column)]
        }
    }

    /// `B`: the frequency sheet's column counted again over the same result, in the bin width
    /// after `after` among those of its numbers' range (after the widest, unbinned); a cancel
    /// leaves the sheet as it was.
    func bin(_ column: String, after: Int64?, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard let collection, frequencies != nil else { return [.failed("the frequency sheet is gone: F again")] }
        let clock = environment.now
        let started = clock()
        report(.started(.counting))
        report(.frequencyProgress(column: column, seconds: 0, rows: 0))
        let rows = rowsToRead()
        guard let range = try collection.numericRange(of: column, rows: rows) else {
            return [.failed("\(column) holds no numbers here: B bins numbers")]
        }
        // Bins are computed with 64-bit integers: past ±2^53 neither they nor their bounds are exact.
        guard range.lowerBound > -9.0e15, range.upperBound < 9.0e15 else {
            return [.failed("\(column) holds numbers beyond ±9e15: B bins only numbers it can bound exactly")]
        }
        let widths = ValueFrequencies.binWidths(for: range)
        let width = after.map { w in widths.first { $0 > w } } ?? widths.first
        do {
            let counted = try count(column, in: collection, binWidth: width, rows: rows, started: started, cancel: cancel, report: report)
            frequencies = counted
            resultSerial += 1
            frequenciesID = resultSerial
            log("frequencies of \(column) in bins of \(width.map(String.init) ?? "none"): \(counted.count) rows in \(counted.seconds)s")
            return [.frequencyBinned(width: width, values: counted.count, total: counted.total, result: resultSerial, seconds: clock() - started)]
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.failed("binning \(column) cancelled: the sheet is as it was")]
        }
    }

    /// The GROUP BY of `F` and `B` (``BatchFaultingCollection/frequencies(of:binWidth:rows:progress:)``),
    /// reporting its progress at most every 0.1 s and stopping at a cancel.
    private func count(_ column: String, in collection: BrowserResult, binWidth: Int64?, rows: ResultRows, started: Double,
                       cancel: CancelFlag, report: (Action) -> Void) throws -> ValueFrequencies {
        let clock = environment.now
        var lastDraw = started
        return try withoutActuallyEscaping(report) { report in
            try collection.frequencies(of: column, binWidth: binWidth, rows: rows) { progress in
                if cancel.isSet { return .cancel }
                if clock() - lastDraw >= 0.1 {
                    lastDraw = clock()
                    report(.frequencyProgress(column: column, seconds: clock() - started, rows: progress.rowsScanned))
                }
                return .proceed
            }
        }
    }

    /// `I`: each column's summary over the result on screen, one after the other, each sent as it
    /// is done; a cancel stops at the column being computed.
    func summarize(_ columns: [String], result: Int, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard let collection, collectionID == result else { return [.failed("the result changed before I could summarise it: I again")] }
        let clock = environment.now
        let started = clock()
        report(.started(.summarizing))
        let rows = rowsToRead()
        var done = 0
        do {
            try withoutActuallyEscaping(report) { report in
                // First figures at once: over a large result, every column's figures of an even
                // sample of its rows (milliseconds at any size, shown marked as a sample), which
                // the exact figures then replace one column at a time.
                if collection.count > Self.summarySampleAbove {
                    for (index, column) in columns.enumerated() {
                        if cancel.isSet { throw BatchStoreError(.cancelled, "the summary was cancelled") }
                        let figures = try collection.summary(of: column, rows: .sample(Self.summarySample)) { _ in cancel.isSet ? .cancel : .proceed }
                        report(.summaryRow(index: index, figures: figures, result: result))
                    }
                }
                for (index, column) in columns.enumerated() {
                    if cancel.isSet { throw BatchStoreError(.cancelled, "the summary was cancelled") }
                    var lastDraw = clock()
                    report(.summaryProgress(index: index, of: columns.count, column: column, seconds: lastDraw - started))
                    let figures = try collection.summary(of: column, rows: rows) { _ in
                        if cancel.isSet { return .cancel }
                        if clock() - lastDraw >= 0.1 {
                            lastDraw = clock()
                            report(.summaryProgress(index: index, of: columns.count, column: column, seconds: lastDraw - started))
                        }
                        return .proceed
                    }
                    report(.summaryRow(index: index, figures: figures, result: result))
                    done += 1
                }
            }
        } catch let error as BatchStoreError where error.code == .cancelled {
            return [.summaryEnded(done: done, of: columns.count, seconds: clock() - started, cancelled: true)]
        }
        log("summary of \(columns.count) columns in \(clock() - started)s")
        return [.summaryEnded(done: done, of: columns.count, seconds: clock() - started, cancelled: false)]
    }

    /// Rows of a frequency preview sent with it (the worker is busy counting until the exact
    /// sheet replaces it, so its first screen cannot be asked for): more than a screen's height.
    static let previewRowCount = 200

    /// The first `first` values of `sample` as the frequency sheet shows them, counts and percents
    /// scaled to the `total` rows of the result and marked ≈ (a sample's figures).
    static func previewRows(_ sample: ValueFrequencies, total: Int, first: Int) throws -> [RowSnapshot] {
        let n = max(1, sample.total), top = max(1, sample.maxCount)
        let scale = Double(total) / Double(n)
        return try sample.values(in: 0..<first).map { entry in
            let percent = String(format: "%.2f%%", Double(entry.count) * 100 / Double(n))
            let bar = String(repeating: "█", count: max(1, Int((Double(entry.count) / Double(top) * Double(barWidth)).rounded())))
            var shown = DisplayValue(entry.value)
            if sample.mixesStorageClasses, case .text = entry.value, let literal = FetchPredicate.literal(entry.value) { shown = .text(literal) }
            return RowSnapshot(id: nil, values: [shown, .text("≈ " + group(Int((Double(entry.count) * scale).rounded()))),
                                                 .text("≈ " + percent), .text(bar)], exists: true)
        }
    }

    /// Rows in a summary's first, sampled figures, and the result size above which they are shown
    /// (below it, the exact figures come about as fast); the same for a frequency sheet's.
    static let summarySample = 10_000
    static let summarySampleAbove = 100_000

    /// `r` on a frequency or summary sheet, coming back to one an edit left stale, and after an
    /// edit on a frequency sheet (`edited` says what the edit did, `started` when): the result the
    /// sheet counts is fetched again as the file is now (its cursor and marks kept), then the sheet
    /// is counted again, the cursor staying on its value; Esc cancels the count (not the edit).
    func recount(_ role: SheetRole, state: BrowserState, edited: String? = nil, started: Double? = nil,
                 cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard collection != nil, let i = state.parentTableIndex else { return [.failed("no result under this sheet to count: Esc goes back")] }
        let clock = environment.now
        let begun = started ?? clock()
        let parent = state.sheets[i]
        let before = edited.map { "\($0); " } ?? ""
        // Keys cancel from here on (Esc does not leave the sheet while its result is read again).
        report(.started(.counting))
        let refreshed: (count: Int, cursor: Int, marks: Marks?)
        do {
            refreshed = try refreshResult(cursor: parent.cursorRow, marks: parent.marks) { refresh in
                try data.interruptible({ _ in cancel.isSet ? .cancel : .proceed }, refresh)
            }
        } catch let error as BatchStoreError where error.code == .cancelled {
            // The result below keeps its old ID table: it is read again on return.
            let figures = role == .summary ? "the summary is empty until r summarises it again" : "this sheet's figures are from before; r counts again"
            return [.recountCancelled("\(before)reading \(parent.title) again was cancelled: \(figures)", parentStale: true)]
        }
        report(.parentRefreshed(count: refreshed.count, cursor: refreshed.cursor, marks: refreshed.marks, edited: edited != nil))
        switch role {
        case .frequency:
            guard let collection, let f = state.frequencySheet, let old = frequencies else { return [.failed("the frequency sheet is gone: F again")] }
            // The cursor's value, exactly (a String would lose invalid UTF-8; GRDB cuts text at a NUL).
            let value = state.cursorRow < old.count ? try old.selection(at: [state.cursorRow]) : nil
            report(.frequencyProgress(column: f.column, seconds: 0, rows: 0))
            do {
                let counted = try count(f.column, in: collection, binWidth: f.binWidth, rows: rowsToRead(), started: begun, cancel: cancel, report: report)
                frequencies = counted
                resultSerial += 1
                frequenciesID = resultSerial
                let at = try value.flatMap { try counted.position(of: $0) } ?? min(state.cursorRow, max(0, counted.count - 1))
                let noun = f.binWidth == nil ? (counted.count == 1 ? "value" : "values") : (counted.count == 1 ? "bin" : "bins")
                log("frequencies of \(f.column) counted again: \(counted.count) values over \(counted.total) rows in \(counted.seconds)s")
                return [.frequencyRecounted(values: counted.count, total: counted.total, result: resultSerial, cursor: at,
                                            message: "\(before)\(f.column) counted again: \(group(counted.count)) \(noun) in \(rows(counted.total)) (\(milliseconds(clock() - begun)))")]
            } catch let error as BatchStoreError where error.code == .cancelled {
                return [.recountCancelled("\(before)counting \(f.column) again was cancelled: its figures are from before; r counts again")]
            }
        case .summary:
            guard let summary = state.summarySheet else { return [] }
            return try summarize(summary.columns, result: summary.result, cancel: cancel, report: report)
        case .table, .text:
            return []
        }
    }

    /// Which rows of ``collection`` a frequency or a summary reads: those its fetch's WHERE matches
    /// now (the table's indexes serve them) while the file is surely as it was when the result was
    /// fetched; else the rows of its ID table. Only an exact data version proves that: a server's
    /// lags another session's commit, and a row inserted since would be counted.
    func rowsToRead() -> ResultRows {
        guard data.engineTraits.exactDataVersion, let fetched = collectionVersion, let now = data.dataVersion(), now == fetched else { return .fetched }
        return .matchingNow
    }

    /// The frequency sheet's rows at `range`: value, count, percent of the rows counted, and a bar
    /// scaled to the most frequent value.
    /// - Complexity: one range scan of the frequency table.
    func frequencyRows(_ range: Range<Int>) throws -> [RowSnapshot] {
        // No counts (a count that failed): rows shown as gone, never an empty answer the screen would ask for again.
        guard let frequencies else { return Array(repeating: RowSnapshot(id: nil, values: [], exists: false), count: range.count) }
        let total = max(1, frequencies.total), top = max(1, frequencies.maxCount)
        let width = frequencies.binWidth
        // Where numbers and text meet (1 and '1' are two values), text is shown as a literal, in quotes.
        let quotesText = frequencies.mixesStorageClasses
        return try frequencies.values(in: range).map { entry in
            var shown = width.flatMap { w in Self.binLabel(entry.value, width: w) }.map(DisplayValue.text) ?? DisplayValue(entry.value)
            if quotesText, case .text = entry.value, let literal = FetchPredicate.literal(entry.value) { shown = .text(literal) }
            let percent = String(format: "%.2f%%", Double(entry.count) * 100 / Double(total))
            let bar = String(repeating: "█", count: max(1, Int((Double(entry.count) / Double(top) * Double(Self.barWidth)).rounded())))
            return RowSnapshot(id: nil, values: [shown, .text(group(entry.count)), .text(percent), .text(bar)], exists: true, count: entry.count)
        } + Array(repeating: RowSnapshot(id: nil, values: [], exists: false), count: max(0, range.upperBound - max(range.lowerBound, frequencies.count)))
    }

    /// A bin's lower and upper bound (`lo ≤ v < hi`) for a binned number, nil for NULL, text and
    /// blobs (counted as themselves).
    static func bin(_ value: SQLValue, width: Int64) -> (low: SQLValue, high: SQLValue)? {
        switch value {
        case .integer(let low):
            let (high, overflow) = low.addingReportingOverflow(width)
            return (value, overflow ? .real(Double(low) + Double(width)) : .integer(high))
        case .real(let low) where low.isFinite: return (value, .real(low + Double(width)))
        default: return nil
        }
    }

    /// How a bin shows in the value column: `1990 – 2000` (its rows are `>= 1990` and `< 2000`).
    static func binLabel(_ value: SQLValue, width: Int64) -> String? {
        guard let (low, high) = bin(value, width: width) else { return nil }
        return "\(DisplayValue(low).shown) – \(DisplayValue(high).shown)"
    }

    /// Cells in the most frequent value's bar.
    static let barWidth = 30

    /// Enter on a frequency sheet: the parent's table, filter and sort, and the value at `row`, as
    /// a new sheet (`genre == "Drama"`, `genre == nil`; the value written as a literal of the
    /// predicate language, never spliced raw).
    func openValue(at row: Int, of sheet: FrequencySheet, state: BrowserState, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard let frequencies, let entry = try frequencies.values(in: row..<(row + 1)).first else { return [] }
        if let sql = FetchPredicate.sqlCondition(ofFilter: sheet.filter) {
            // A SQL filter is narrowed in SQL, to exactly the rows the sheet counted under the
            // value (text byte for byte whatever the column's collation, bins by the expression
            // that grouped them).
            guard let narrowing = try frequencies.selection(at: [row]).sqliteCondition else {
                return [.failed("this sheet's values are PostgreSQL's: a SQL filter runs on SQLite files only")]
            }
            let filter = "WHERE (\(sql.trimmingCharacters(in: .whitespacesAndNewlines))) AND \(narrowing)"
            return try open(sheet.table, filter: filter, sorts: sheet.sort.map { [$0] } ?? [], cursor: 0, push: true, state: state, cancel: cancel, report: report)
        }
        let range = frequencies.binWidth.flatMap { w in Self.bin(entry.value, width: w) }.flatMap { bin -> String? in
            guard let low = FetchPredicate.literal(bin.low), let high = FetchPredicate.literal(bin.high) else { return nil }
            let key = FetchPredicate.formatKey(frequencies.attribute)
            return "\(key) >= \(low) AND \(key) < \(high)"
        }
        var value = entry.value
        // A PostgreSQL `numeric` reads as its exact text, but compares as a number: written as one.
        if range == nil, case .text(let text) = value, let entity = try? data.entity(named: sheet.table),
           let i = entity.indexOfAttribute(named: frequencies.attribute), Self.isDecimalType(entity.attributes[i].declaredType) {
            guard let number = Self.exactDouble(text) else {
                return [.failed("this value (\(DisplayValue(value).shown)) cannot be written as a filter: a filter's numbers keep 15 digits (v then D or U on the sheet act on it exactly)")]
            }
            value = .real(number)
        }
        guard let condition = range ?? FetchPredicate.equalityFormat(key: frequencies.attribute, value: value) else {
            return [.failed("this value (\(DisplayValue(entry.value).shown)) cannot be written as a filter: blobs and infinite numbers have no literal")]
        }
        let filter = sheet.filter.isEmpty ? condition : "(\(sheet.filter)) AND \(condition)"
        return try open(sheet.table, filter: filter, sorts: sheet.sort.map { [$0] } ?? [], cursor: 0, push: true, state: state, cancel: cancel, report: report)
    }

    /// True for a declared type of exact decimals (`numeric(10,2)`, `decimal`), whose values a
    /// PostgreSQL store reads as text.
    static func isDecimalType(_ declared: String) -> Bool {
        let type = declared.lowercased()
        return type.hasPrefix("numeric") || type.hasPrefix("decimal")
    }

    /// The double a decimal's text is exactly, when it has at most 15 significant digits (a double
    /// holds those exactly enough to compare equal); nil for more, NaN and the infinities.
    static func exactDouble(_ text: String) -> Double? {
        guard let d = Double(text), d.isFinite else { return nil }
        let digits = text.drop { $0 == "-" || $0 == "+" }.filter(\.isNumber)
        let significant = digits.drop { $0 == "0" }
        let trimmed = text.contains(".") ? significant.reversed().drop { $0 == "0" } : significant.reversed().drop { _ in false }
        return trimmed.count <= 15 ? d : nil
    }

    /// Esc or q on a stacked sheet (`state` is the state it left, the sheet under it on screen): a
    /// frequency sheet's counts go; a summary holds nothing here; a table sheet's result goes, and
    /// the result the state now shows (its table sheet's, or the one under its frequency,
    /// summary or text sheet) is the one shown. Results no sheet of the state names are let go.
    func closeSheet(_ role: SheetRole, state: BrowserState) {
        switch role {
        case .frequency: frequencies = nil; frequenciesID = nil; return
        case .summary, .text: return
        case .table: break
        }
        if !eagerArray.isEmpty { eagerArray = []; environment.returnFreeMemory() }
        let named = Set(state.sheets.compactMap(\.resultID) + [state.resultID].compactMap { $0 })
        // A frequency sheet's table is always a sheet below it: the IDs of the sheets are enough.
        results = results.filter { named.contains($0.key) }
        shownID = state.resultID.flatMap { id in results[id] != nil ? id : results.first { $0.value.frequenciesID == id }?.key }
        lastFaultSeconds = nil
    }
}
