import BatchStore
import Browser
import Foundation
import GRDB
import Testing
import TerminalCore

/// An edit undo cannot restore runs without undo and says why; the browser tells by the error's
/// code, not its text.
@Suite("Edits that cannot be undone")
struct UndoRefusalTests {
    @Test("D on a table other tables cascade from deletes without undo, says why, and u then has nothing to undo")
    func cascadeDeletesWithoutUndo() throws {
        let dir = TempDir()
        let path = try makeDatabase(dir, sql: """
            CREATE TABLE director(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE movie(id INTEGER PRIMARY KEY, director_id INTEGER REFERENCES director(id) ON DELETE CASCADE);
            INSERT INTO director VALUES (1, 'Varda'), (2, 'Ozu');
            INSERT INTO movie VALUES (10, 1), (11, 2);
            """)
        let (b, _) = try makeBrowser(path, options: BrowserOptions(table: "director"))
        #expect(b.state.count == 2)
        b.send(keys("vDy"))
        #expect(b.state.message?.hasPrefix("deleted 1 row from director; no undo: deleting from director changes movie through foreign-key actions") == true,
                "\(b.state.message ?? "no message")")
        #expect(try direct(path) { try Int.fetchAll($0, sql: "SELECT id FROM director") } == [2])
        b.send(.char("u"))
        #expect(b.state.message == "nothing to undo")
    }
}
