import BatchStore
import BatchStorePostgres
import Browser
import Foundation
import Testing
import TerminalCore
import TestSupport

/// A PostgreSQL session lost under the browser (a server restart, `pg_terminate_backend`,
/// `idle_session_timeout`): one line on screen, every key still answered, `r` reads the result
/// again in a new session with the cursor's row kept. Before, the next key that needed rows asked
/// for them again and again, and the browser spun deaf until SIGTERM.
@Suite("A lost PostgreSQL session", .tags(.postgres, .slow), .timeLimit(slowTestLimit))
struct LostSessionTests {
    @Test("the backend killed under the browser: G says so in one line at once, keys still act, q quits; r opens the result in a new session where the cursor was, with a change committed meanwhile")
    func lostSession() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("lost", sql: "CREATE TABLE t(id int PRIMARY KEY, v int); INSERT INTO t SELECT g, g * 10 FROM generate_series(1, 5000) g;")
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let context = PostgresContext(store: store)
        let terminal = MemoryTerminal(width: 90, height: 12)
        let browser = try Browser(context: context, name: "lost", options: BrowserOptions(table: "t", batchSize: 20), backend: terminal)
        browser.start()
        #expect(browser.state.count == 5000)
        // Sessions ask the server to notice a client that went away (PostgreSQL 14 and later).
        let interval = try store.openSession()
        #expect(try interval.query("SHOW client_connection_check_interval").first?.first?.textValue == "2s")
        interval.close()
        // A watchdog: a browser that spins would hang the suite; this fails it instead.
        let done = ManagedAtomicFlag()
        Thread {
            for _ in 0..<600 where !done.isSet { usleep(100_000) }
            if !done.isSet { FileHandle.standardError.write(Data("LostSessionTests: the browser did not answer within 60 s\n".utf8)); exit(3) }
        }.start()
        defer { done.set() }
        try server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()", database: database)
        #expect(try waitUntil(timeout: 5) {
            try server.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()", database: database)
                .trimmingCharacters(in: .whitespacesAndNewlines) == "0"
        }, "the server's sessions were terminated")
        browser.send(.char("G"))
        #expect(browser.state.cursorRow == 4999)
        #expect(browser.state.messageIsError && browser.state.message?.hasPrefix("cannot read these rows: ") == true
                && browser.state.message?.hasSuffix("; r reads them again, q quits") == true, "\(browser.state.message ?? "")")
        #expect(terminal.lines.last?.contains("cannot read these rows") == true)
        // The rows not read are said to be unread, not deleted.
        #expect(terminal.lines.contains { $0.contains("(not read: these rows could not be read; r reads them again)") }, "\(terminal.lines)")
        #expect(!terminal.lines.contains { $0.contains("(gone") })
        // Keys still act (moving within the window asks nothing of the server).
        browser.send(.char("k"))
        #expect(browser.state.cursorRow == 4998)
        // Another session's change, then r: a new session, the same result, the cursor where it was.
        try server.psql("UPDATE t SET v = -1 WHERE id = 4999", database: database)
        browser.send(.char("r"))
        #expect(browser.state.count == 5000 && browser.state.cursorRow == 4998, "\(browser.state.message ?? "")")
        #expect(browser.state.message?.hasPrefix("the session was lost (") == true, "\(browser.state.message ?? "")")
        #expect(terminal.lines.contains { $0.contains(" 4999 ") && $0.contains(" -1") }, "\(terminal.lines)")
        // Lost again: q still quits.
        try server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()", database: database)
        #expect(try waitUntil(timeout: 5) {
            try server.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()", database: database)
                .trimmingCharacters(in: .whitespacesAndNewlines) == "0"
        }, "the server's sessions were terminated")
        browser.send([.char("g"), .char("q")])
        #expect(browser.state.quit)
    }
}

/// A flag one thread sets and another reads.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
