import BatchStore
import Foundation
import TerminalCore

extension EffectRunner {
    /// `entity`'s foreign keys both ways, from the schema: its relationships (to-one), and every
    /// entity's relationships whose destination it is (to-many).
    /// - Complexity: O(the relationships of every entity).
    func links(of entity: Entity) -> TableLinks {
        func reference(_ r: Relationship, from child: Entity) -> Reference {
            let parent = data.entities.first { $0.name == r.destinationEntityName }
                ?? data.entities.first { $0.name.caseInsensitiveCompare(r.destinationEntityName) == .orderedSame }
            let parentColumns = r.destinationColumns.isEmpty ? (parent?.primaryKey ?? []) : r.destinationColumns
            return Reference(child: child.name, childColumns: r.sourceColumns, parent: parent?.name ?? r.destinationEntityName, parentColumns: parentColumns)
        }
        let toOne = entity.relationships.map { reference($0, from: entity) }
        var toMany: [Reference] = []
        for other in data.entities where other.kind != .view {
            for r in other.relationships where r.destinationEntityName.caseInsensitiveCompare(entity.name) == .orderedSame {
                toMany.append(reference(r, from: other))
            }
        }
        return TableLinks(toOne: toOne, toMany: toMany, editTables: entity.editTables)
    }

    /// Enter on a foreign-key cell (the row it refers to) or `R` (the rows that refer to this
    /// one): the other table filtered to the key's values, `director_id == 7` or
    /// `a == 1 AND b == "x"`, opened as a new sheet through the same fetch as any filter, so it
    /// scrolls like any table. The values are read whole from the row (not the grid's cut
    /// text) and written as literals of the predicate language, never spliced raw.
    func openRelated(_ reference: Reference, toMany: Bool, row: Int, result: Int, state: BrowserState,
                     cancel: CancelFlag, report: (Action) -> Void) throws -> [Action] {
        let from = toMany ? reference.parentColumns : reference.childColumns
        let target = toMany ? reference.child : reference.parent
        let to = toMany ? reference.childColumns : reference.parentColumns
        let shown = { (s: String) in TerminalText.escapingControlCharacters(s) }
        let key = shown(from.joined(separator: ", "))
        if data.showsStores {
            return [.failed("keys are followed within one file: with several files open, \(key) could name a row in each")]
        }
        guard !to.isEmpty, to.count == from.count else {
            return [.failed("\(shown(reference.child))(\(shown(reference.childColumns.joined(separator: ", ")))) refers to \(shown(reference.parent)), which declares no primary key: SQLite cannot resolve that key, so it cannot be followed")]
        }
        guard (try? data.entity(named: target)) != nil else {
            return [.failed("\(key) refers to \(shown(target)), which is not in this file")]
        }
        guard let collection, collectionID == result else { return [.failed("the result changed before the key could be followed: try again")] }
        guard let object = try timingFaults(of: collection, { try self.object(at: row, of: collection) }) else {
            return [.failed("row \(group(row + 1)) was deleted since the result was fetched; r reloads")]
        }
        var conditions: [String] = []
        var described: [String] = []
        for (source, destination) in zip(from, to) {
            let value = try object.value(forKey: source)
            if value == .null {
                // SQLite's foreign keys: a NULL in any column is no reference.
                return [.info(toMany
                    ? "\(shown(source)) is ∅ in this row: no row of \(shown(target)) can refer to it"
                    : "\(shown(source)) is ∅: this row refers to no \(shown(target)) row")]
            }
            guard let condition = FetchPredicate.equalityFormat(key: destination, value: value) else {
                return [.failed("\(shown(source)) holds a \(value.isBlob ? "blob" : "non-finite number"): the filter language has no literal for it, so the key cannot be followed")]
            }
            conditions.append(condition)
            described.append(shown(condition))
        }
        let filter = conditions.joined(separator: " AND ")
        let request = FetchRequest(entityName: target, predicate: try FetchPredicate(format: filter))
        if !toMany, try data.count(request) == 0 {
            return [.failed("no \(shown(target)) row has \(described.joined(separator: " AND ")): \(key) dangles (the row it names does not exist)")]
        }
        let note = toMany ? "\(shown(target)) rows referring to this row (\(described.joined(separator: " AND ")))" : "the \(shown(target)) row \(key) refers to"
        return try open(target, filter: filter, sorts: [], cursor: 0, push: true, note: note, state: state, cancel: cancel, report: report)
    }
}

extension SQLValue {
    var isBlob: Bool { if case .blob = self { return true } else { return false } }
}
