import Foundation

/// SQL for one fetch request against one entity.
struct CompiledFetch {
    let entity: Entity
    /// `FROM … WHERE … ORDER BY …` (no SELECT list, no LIMIT).
    let fromWhereOrder: String
    /// Same without ORDER BY (for counts).
    let fromWhere: String
    /// ` WHERE …` alone, or empty (for UPDATE and DELETE without joins).
    let whereClause: String
    let arguments: [SQLValue]
    let orderArguments: [SQLValue]
    let limitClause: String
    let builder: QueryBuilder
    /// SQL for each of `properties` given at init (their joins are in the FROM clause).
    let propertyColumns: [String]

    init(request: FetchRequest, store: PersistentStore, properties: [String] = []) throws {
        try self.init(request: request, entity: try store.entity(named: request.entityName), schema: store.schema, properties: properties)
    }

    /// The same for `entity` of `schema`, attached as `databaseName` on the connection.
    init(request: FetchRequest, entity: Entity, schema: Schema, databaseName: String = "main", properties: [String] = []) throws {
        try request.checkBounds(batchSize: true)
        let builder = QueryBuilder(entity: entity, schema: schema, databaseName: databaseName)
        var whereSQL = ""
        if let p = request.predicate {
            whereSQL = " WHERE " + (try builder.compile(p.node))
        }
        let whereArgs = builder.arguments
        var order = try request.effectiveSortDescriptors.map { "\(try builder.column(for: $0.keyPath)) \($0.ascending ? "ASC" : "DESC")" }
        order += builder.keyColumnsSQL.map { "\($0) \(request.keyDirection)" }
        self.propertyColumns = try properties.map {
            try builder.column(for: $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init))
        }
        self.entity = entity
        self.builder = builder
        let from = " FROM \(builder.fromClause)"
        self.fromWhere = from + whereSQL
        self.whereClause = whereSQL
        self.fromWhereOrder = from + whereSQL + (order.isEmpty ? "" : " ORDER BY " + order.joined(separator: ", "))
        self.arguments = whereArgs
        self.orderArguments = Array(builder.arguments.dropFirst(whereArgs.count))
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            self.limitClause = " LIMIT \(request.fetchLimit > 0 ? request.fetchLimit : -1) OFFSET \(request.fetchOffset)"
        } else {
            self.limitClause = ""
        }
    }

    var allArguments: [SQLValue] { arguments + orderArguments }
}
