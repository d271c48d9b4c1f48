import Foundation

/// A context whose objects hold unsaved changes until ``save()``: Core Data's scratchpad, on
/// either engine (a ``ManagedObjectContext`` over a SQLite file, a `PostgresContext` over a
/// server). Code written against it, and the behavioural suite `SaveModel` in the tests, run the
/// same on both.
///
/// What they share:
/// - ``ManagedObject/setValue(_:forKey:)``, ``insertObject(into:values:)`` and ``delete(_:)``
///   change nothing in the store; the context holds the changed objects strongly until they are
///   saved or rolled back.
/// - ``save()`` writes every change in one transaction (deletes, then updates, then inserts); on
///   any error nothing is written and the changes stay pending. An update of a row deleted
///   meanwhile is an error (`.objectNotFound`), a delete of one is not.
/// - Inserted objects get their row's key as their ID at the save.
/// - A merge that names an object with unsaved changes follows ``mergePolicy``.
/// - ``ObjectContext/reset()`` drops every unsaved change before it forgets the objects.
///
/// What differs: a SQLite object keeps the values as given and an insert reads its defaults at
/// its next access; a PostgreSQL object holds its row as the server returned it from the save
/// (`RETURNING`), defaults and the column types' readings included.
public protocol SavingContext: ObjectContext {
    /// How a merge treats objects with unsaved changes whose rows a batch updated.
    var mergePolicy: MergePolicy { get set }
    /// True when some object has unsaved changes.
    var hasChanges: Bool { get }
    /// Objects with unsaved changes (inserted, updated or deleted), in no particular order.
    var changedObjects: [ManagedObject] { get }
    /// A new object of `entityName` with `values`; it gets its row's key as its ID at the save.
    func insertObject(into entityName: String, values: [String: SQLValue]) throws -> ManagedObject
    /// Marks `object` for deletion at the next save (an inserted one is simply dropped).
    func delete(_ object: ManagedObject) throws
    /// Writes every unsaved change in one transaction, or nothing.
    func save() throws
    /// Discards every unsaved change.
    func rollback()
}
