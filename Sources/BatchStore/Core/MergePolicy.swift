import Foundation

/// How a merge treats a registered object that has unsaved changes and whose row a batch updated.
public enum MergePolicy: Sendable {
    /// Leave the object as it is and report it in ``MergeReport/conflicts`` (the default).
    case error
    /// The store wins: the object's unsaved changes are dropped and it is refaulted.
    case storeWins
    /// The object's unsaved changes win over the new values; other properties take the store's.
    case inMemoryWins
}
