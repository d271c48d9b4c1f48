import BatchStore
import Foundation
import GRDB
@_exported import TestSupport

extension ManagedObject {
    var intID: Int64 { if case .rowid(let r) = objectID.key { return r } else { return -1 } }
}
