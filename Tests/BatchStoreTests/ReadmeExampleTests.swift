import BatchStore
import Foundation
import Testing

// The README's library example, verbatim (DocumentationTests checks that it still is), so that it
// compiles against the API as it is.
func readmeExample() throws {
let store = try PersistentStore(path: "movies.sqlite")      // a missing path is .fileNotFound
let context = try ManagedObjectContext(store: store)

var request = FetchRequest(entityName: "movie")
request.predicate = try FetchPredicate("year >= %@ AND genre IN %@", 1990, .list(["Noir", "Drama"]))
request.sortDescriptors = try SortDescriptor.parse("rating desc")
request.fetchBatchSize = 100

let movies = try context.fetchBatched(request)   // row IDs into a temp table; no row read yet
print(movies.count)
if let last = movies.last ?? nil {               // faults one batch of 100 rows (nil: row deleted)
    print(try last["title"], try last["rating"])
}

let result = try context.execute(BatchUpdateRequest(entityName: "movie",
    predicate: try FetchPredicate("genre == 'Noir'"),
    propertiesToUpdate: try UpdateExpression.parseAssignments("votes = votes + 1"),
    resultType: .changes))
if let changes = result.changes {
    _ = ManagedObjectContext.mergeChanges(changes, into: [context])   // refault what is stale
}
}

@Suite("The README's example")
struct ReadmeExampleTests {
    @Test("compiles against the API as it is; where there is no movies.sqlite it stops at its first line, creating nothing")
    func compilesAndRefusesAMissingFile() throws {
        let path = FileManager.default.currentDirectoryPath + "/movies.sqlite"
        try #require(!FileManager.default.fileExists(atPath: path), "a movies.sqlite in the test's folder")
        #expect(throws: BatchStoreError.self) { try readmeExample() }
        do { try readmeExample() } catch let error as BatchStoreError { #expect(error.code == .fileNotFound, "\(error)") }
        #expect(!FileManager.default.fileExists(atPath: path), "the example created movies.sqlite")
    }
}
