/// The order a context's ``SavingContext/save()`` writes its changes in, on either engine:
/// deletes, then updates, then inserts (so a unique value a deleted or changed row gives up is
/// free before an insert takes it); inserts parents before children and deletes children before
/// parents, by the tables' foreign keys (so a parent and its child saved together never break a
/// key the child's table checks at once); then by table name, then by key, so that consecutive
/// statements touch neighbouring pages (in hash order, a large save wrote each page many times over).
package struct SaveOrder {
    /// Each table's depth in the foreign-key graph, by lower-cased name: 0 for a table that
    /// refers to none, else one more than the deepest table it refers to (a cycle is cut where it
    /// closes; a table's keys into itself do not count).
    let depth: [String: Int]

    package init(_ entities: [Entity]) {
        var byName: [String: Entity] = [:]
        for entity in entities { byName[entity.name.lowercased()] = entity }
        var depth: [String: Int] = [:]
        var visiting: Set<String> = []
        func visit(_ name: String) -> Int {
            if let known = depth[name] { return known }
            guard let entity = byName[name], !visiting.contains(name) else { return 0 }
            visiting.insert(name)
            let parents = entity.relationships.map { $0.destinationEntityName.lowercased() }.filter { $0 != name }
            let d = parents.map { visit($0) + 1 }.max() ?? 0
            visiting.remove(name)
            depth[name] = d
            return d
        }
        for name in byName.keys.sorted() { _ = visit(name) }
        self.depth = depth
    }

    /// True when `a` is written before `b`.
    package func writesBefore(_ a: ManagedObject, _ b: ManagedObject) -> Bool {
        func phase(_ o: ManagedObject) -> Int { o.isInserted ? 2 : (o.isDeleted ? 0 : 1) }
        let pa = phase(a), pb = phase(b)
        if pa != pb { return pa < pb }
        if a.entity !== b.entity {
            let da = depth[a.entity.name.lowercased()] ?? 0, db = depth[b.entity.name.lowercased()] ?? 0
            // Inserts parents first; deletes children first; updates as inserts.
            if da != db { return pa == 0 ? da > db : da < db }
            return a.entity.name < b.entity.name
        }
        switch (a.objectID.key, b.objectID.key) {
        case (.rowid(let x), .rowid(let y)): return x < y
        case (.temporary(let x), .temporary(let y)): return x < y
        case (.primaryKey(let x), .primaryKey(let y)) where x.count == 1 && y.count == 1:
            if let i = x[0].integerValue, let j = y[0].integerValue { return i < j }
            return a.objectID.keyString < b.objectID.keyString
        default: return a.objectID.keyString < b.objectID.keyString
        }
    }
}
