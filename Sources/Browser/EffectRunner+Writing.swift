import BatchStore
import FaultlineCodecs
import Foundation
import TerminalCore

/// What a file holds, from its extension: rows as `faultline export` writes them, or SQL INSERTs.
enum OutputFormat: Equatable {
    case rows(ExportFormat)
    case sql

    /// `.tsv`, `.csv`, `.json` (an array), `.ndjson` / `.jsonl` (an object a line), `.sql` (any
    /// case); nil for anything else.
    init?(path: String) {
        switch (path as NSString).pathExtension.lowercased() {
        case "tsv": self = .rows(.tsv)
        case "csv": self = .rows(.csv)
        case "json": self = .rows(.json)
        case "ndjson", "jsonl": self = .rows(.ndjson)
        case "sql": self = .sql
        default: return nil
        }
    }

    /// The name a message gives it.
    var name: String {
        switch self {
        case .rows(.ndjson): return "NDJSON"
        case .rows(let f): return f.rawValue.uppercased()
        case .sql: return "SQL INSERT"
        }
    }
}

/// Encodes streamed rows into a byte buffer in one ``OutputFormat``: the same RowWriter as
/// `faultline export` (so escaping is byte for byte the same), or an ``InsertWriter``.
struct RowEncoder {
    let format: OutputFormat
    private var rows: RowWriter?
    private let inserts: InsertWriter?
    private let storeNames: [String]?

    init(format: OutputFormat, table: String, columns: [String], storeNames: [String]?) {
        self.format = format
        self.storeNames = storeNames
        switch format {
        case .rows(let f):
            rows = RowWriter(format: f, columns: columns, withStore: storeNames != nil)
            inserts = nil
        case .sql:
            rows = nil
            inserts = InsertWriter(table: table, columns: columns)
        }
    }

    /// The header line (TSV, CSV; a JSON array's `[`), as export writes it; nothing for the others.
    var header: String { rows?.header() ?? "" }

    /// What follows the last row (a JSON array's `]`), as export writes it; nothing for the others.
    var footer: String { rows?.footer() ?? "" }

    mutating func append(_ row: StreamedRow, to out: inout [UInt8]) {
        if rows != nil { rows?.append(row, store: storeNames.map { $0[row.storeIndex] }, to: &out) } else { inserts?.append(row, to: &out) }
    }

    mutating func append(_ values: [SQLValue], store: String?, to out: inout [UInt8]) {
        if rows != nil { rows?.append(values, store: store, to: &out) } else { inserts?.append(values, to: &out) }
    }
}

/// A file written under a temporary name beside its destination and moved there only when it is
/// complete: a cancel or a failure leaves no half-written file.
final class StagedFile {
    let path: String
    let temporary: String
    private var fd: Int32
    var bytes: [UInt8] = []

    /// Creates the temporary file; refuses (before writing anything) when `path` exists and
    /// `overwrite` is false, or is a folder.
    init(_ path: String, overwrite: Bool) throws {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) {
            if isFolder.boolValue { throw BatchStoreError(.invalidArgument, "\(TerminalText.escapingControlCharacters(path)) is a folder") }
            if !overwrite { throw BatchStoreError(.invalidArgument, "\(TerminalText.escapingControlCharacters(path)) exists: :w! \(TerminalText.escapingControlCharacters(path)) overwrites it") }
        }
        let url = URL(fileURLWithPath: path)
        self.path = path
        temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).faultline-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp").path
        fd = Foundation.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 { throw BatchStoreError(.invalidArgument, "cannot write \(TerminalText.escapingControlCharacters(path)): \(String(cString: strerror(errno)))") }
        bytes.reserveCapacity(1 << 17)
    }

    deinit { discard() }

    /// Writes the buffer out once it holds 64 KiB.
    @inline(__always)
    func didAppend() throws { if bytes.count >= 65_536 { try flush() } }

    func flush() throws {
        var written = 0
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while written < buffer.count {
                let n = Foundation.write(fd, base + written, buffer.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BatchStoreError(.sqlite(-1), "cannot write \(TerminalText.escapingControlCharacters(path)): \(String(cString: strerror(errno)))")
                }
                written += n
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }

    /// Flushes, closes and moves the file to its name: over an existing file with `overwrite`,
    /// else only if no file took the name meanwhile.
    func commit(overwrite: Bool) throws {
        try flush()
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
        fd = -1
        let moved = overwrite ? rename(temporary, path) : link(temporary, path)
        let failure = errno
        unlink(temporary)
        if moved != 0 {
            let shown = TerminalText.escapingControlCharacters(path)
            throw BatchStoreError(.invalidArgument, failure == EEXIST ? "\(shown) exists: :w! \(shown) overwrites it" : "cannot write \(shown): \(String(cString: strerror(failure)))")
        }
    }

    /// Removes the temporary file (nothing was written to the name).
    func discard() {
        if fd >= 0 { close(fd); fd = -1; unlink(temporary) }
    }
}

extension EffectRunner {
    /// `:w FILE`: the result on screen (its filter and sort) streamed to FILE in the format its
    /// extension names, through the same statement as `faultline export` (`streamRows(_:inPlace:values:)`)
    /// and the same ``RowWriter``; progress and the time so far every 0.1 s; a cancel stops it and
    /// leaves no file.
    /// - Complexity: one forward pass over the result's rows; memory is the 64 KiB buffer.
    func write(to path: String, overwrite: Bool, result: Int, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard let collection, collectionID == result else { return [.failed("the result changed before :w could write it: :w again")] }
        let shown = TerminalText.escapingControlCharacters(path)
        guard let format = OutputFormat(path: path) else {
            return [.failed("\(shown): the extension names the format: .tsv, .csv, .json, .ndjson, .sql")]
        }
        let entity = try data.entity(named: collection.request.entityName)
        let request = FetchRequest(entityName: entity.name, predicate: collection.request.predicate, sortDescriptors: collection.request.sortDescriptors)
        var encoder = RowEncoder(format: format, table: entity.name, columns: entity.attributes.map(\.name), storeNames: data.showsStores ? data.context.storeNames : nil)
        let file = try StagedFile(path, overwrite: overwrite)
        let total = collection.count
        let clock = environment.now
        let started = clock()
        var lastDraw = started
        var written = 0
        report(.started(.writing))
        report(.writeProgress(path: path, rows: 0, of: total, seconds: 0))
        do {
            file.bytes += encoder.header.utf8
            try withoutActuallyEscaping(report) { report in
                func wrote() throws {
                    try file.didAppend()
                    written += 1
                    if written & 1023 == 0 {
                        if cancel.isSet { throw BatchStoreError(.cancelled, "the write was cancelled") }
                        if clock() - lastDraw >= 0.1 {
                            lastDraw = clock()
                            report(.writeProgress(path: path, rows: written, of: total, seconds: lastDraw - started))
                        }
                    }
                }
                try data.streamRows(request, inPlace: { row in
                    encoder.append(row, to: &file.bytes)
                    try wrote()
                }, values: { values in
                    encoder.append(values, store: nil, to: &file.bytes)
                    try wrote()
                })
            }
            if cancel.isSet { throw BatchStoreError(.cancelled, "the write was cancelled") }
            file.bytes += encoder.footer.utf8
            try file.commit(overwrite: overwrite)
        } catch let error as BatchStoreError where error.code == .cancelled {
            file.discard()
            return [.writeEnded("writing \(shown) cancelled after \(rows(written)): no file written", error: false)]
        } catch {
            file.discard()
            throw error
        }
        log("wrote \(written) rows to \(path) in \(clock() - started)s")
        return [.writeEnded("wrote \(rows(written)) to \(shown) (\(format.name)) in \(milliseconds(clock() - started))", error: false)]
    }
}

extension EffectRunner {
    /// Largest copy sent to the clipboard with OSC 52 (terminals cap what they take); a bigger
    /// one goes to the file instead, and the message says so.
    static let clipboardLimit = 1 << 20

    /// `y` / `Y`: the cell, the row, the marked rows or (after `V`) every row of the result,
    /// encoded as `:w` and `faultline export` encode them, to the clipboard (OSC 52, when the user
    /// enabled it) or to `faultline-copy.<format>` in the copy folder. Marked rows are read one
    /// at a time and written out in 64 KiB steps; every row is streamed by one statement.
    func copy(_ request: CopyRequest, cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        guard let collection, collectionID == request.result else { return [.failed("the result changed before y could copy it: y again")] }
        let entity = try data.entity(named: collection.request.entityName)
        let format: OutputFormat
        switch request.format {
        case .tsv: format = .rows(.tsv)
        case .csv: format = .rows(.csv)
        case .json: format = .rows(.json)
        case .sql: format = .sql
        }
        var columns = entity.attributes.map(\.name)
        var cellIndex: Int?
        if case .cell(_, let column) = request.scope {
            guard let index = entity.indexOfAttribute(named: column) else { return [.failed("no column \(TerminalText.escapingControlCharacters(column)) to copy")] }
            columns = [entity.attributes[index].name]
            cellIndex = index
        }
        let storeNames = data.showsStores && cellIndex == nil ? data.context.storeNames : nil
        var encoder = RowEncoder(format: format, table: entity.name, columns: columns, storeNames: storeNames)
        var folder = NSTemporaryDirectory()
        if let state = options.copyDirectory {
            try? FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            if FileManager.default.isWritableFile(atPath: state) { folder = state }
        }
        let path = URL(fileURLWithPath: folder).appendingPathComponent("faultline-copy.\(request.format.rawValue)").path
        let file = try StagedFile(path, overwrite: true)
        file.bytes += encoder.header.utf8
        var copied = 0
        let clock = environment.now
        let started = clock()
        var lastDraw = started
        func values(of object: ManagedObject) throws -> [SQLValue] {
            if let cellIndex { return [try object.value(at: cellIndex)] }
            return try entity.attributes.indices.map { try object.value(at: $0) }
        }
        func tick(of total: Int) throws {
            copied += 1
            guard copied & 1023 == 0 else { return }
            if cancel.isSet { throw BatchStoreError(.cancelled, "the copy was cancelled") }
            if clock() - lastDraw >= 0.1 {
                lastDraw = clock()
                report(.writeProgress(path: path, rows: copied, of: total, seconds: lastDraw - started))
            }
        }
        report(.started(.writing))
        do {
            switch request.scope {
            case .cell(let row, _), .row(let row):
                guard let object = try self.object(at: row, of: collection) else {
                    return [.writeEnded("row \(group(row + 1)) was deleted since the result was fetched; r reloads", error: true)]
                }
                encoder.append(try values(of: object), store: storeNames == nil ? nil : object.objectID.entity.storeName, to: &file.bytes)
                copied = 1
            case .marked(let ids):
                // In key order (rowid, else the key's text); one row faulted at a time.
                // A query's rows (marked by position in this result), in result order.
                let ordered = ids.sorted { a, b in
                    if case .rowid(let x) = a.key, case .rowid(let y) = b.key, a.entity.storeName == b.entity.storeName { return x < y }
                    if case .position(let x) = a.key, case .position(let y) = b.key { return x < y }
                    return a.description < b.description
                }
                try withoutActuallyEscaping(report) { _ in
                    for id in ordered {
                        let found: ManagedObject?
                        if case .position(let p) = id.key { found = try self.object(at: p, of: collection) } else { found = try? data.existingObject(with: id) }
                        guard let object = found else { continue }
                        encoder.append(try values(of: object), store: storeNames == nil ? nil : id.entity.storeName, to: &file.bytes)
                        try file.didAppend()
                        try tick(of: ordered.count)
                    }
                }
            case .all:
                let all = FetchRequest(entityName: entity.name, predicate: collection.request.predicate, sortDescriptors: collection.request.sortDescriptors)
                try data.streamRows(all, inPlace: { row in
                    encoder.append(row, to: &file.bytes)
                    try file.didAppend()
                    try tick(of: collection.count)
                }, values: { values in
                    encoder.append(values, store: nil, to: &file.bytes)
                    try file.didAppend()
                    try tick(of: collection.count)
                })
            }
            if cancel.isSet { throw BatchStoreError(.cancelled, "the copy was cancelled") }
            file.bytes += encoder.footer.utf8
        } catch let error as BatchStoreError where error.code == .cancelled {
            file.discard()
            return [.writeEnded("copy cancelled after \(rows(copied)): nothing copied", error: false)]
        }
        let what = cellIndex != nil ? "the cell \(TerminalText.escapingControlCharacters(columns[0]))" : rows(copied)
        let name = request.format == .sql ? "SQL INSERT" : request.format.rawValue.uppercased()
        if options.osc52 {
            try file.flush()
            let size = (try? FileManager.default.attributesOfItem(atPath: file.temporary)[.size] as? Int) ?? nil
            if let size, size <= Self.clipboardLimit, let bytes = FileManager.default.contents(atPath: file.temporary) {
                file.discard()
                return [.clipboard(base64: bytes.base64EncodedString()),
                        .writeEnded("copied \(what) as \(name) to the clipboard (OSC 52, \(counted(size, "byte")))", error: false)]
            }
            try file.commit(overwrite: true)
            return [.writeEnded("copied \(what) as \(name) to \(TerminalText.escapingControlCharacters(path)): over the clipboard's \(group(Self.clipboardLimit / 1024)) KiB (OSC 52)", error: false)]
        }
        try file.commit(overwrite: true)
        return [.writeEnded("copied \(what) as \(name) to \(TerminalText.escapingControlCharacters(path))", error: false)]
    }
}
