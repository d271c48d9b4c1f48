import GRDB

extension ManagedObject {
    /// Decodes the object's values into a record type through GRDB's Codable support (or any
    /// `FetchableRecord`), fulfilling the fault first. A convenience on top of managed objects: the
    /// record is a snapshot, not registered, and changes to it are not saved.
    ///
    /// ```swift
    /// struct Movie: Decodable, FetchableRecord { var id: Int64; var title: String; var rating: Double? }
    /// let movie = try object.decode(Movie.self)
    /// ```
    /// - Throws: `.objectNotFound` when the row is gone; GRDB's decoding errors for mismatched types.
    public func decode<Record: FetchableRecord>(_ type: Record.Type) throws -> Record {
        var dictionary: [String: (any DatabaseValueConvertible)?] = [:]
        for (i, attribute) in entity.attributes.enumerated() {
            dictionary[attribute.name] = try value(at: i).databaseValue
        }
        return try Record(row: Row(dictionary))
    }
}
