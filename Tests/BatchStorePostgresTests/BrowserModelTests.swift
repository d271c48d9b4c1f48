import BatchStore
import BatchStorePostgres
import Browser
import Foundation
import TerminalCore
import Testing
import TestSupport

/// The browser's model-based random run (``BrowserModel``, one definition in TestSupport) over
/// PostgreSQL, as `ModelTests` runs it over a SQLite file: the same steps, the same model, the
/// same checks; another session writes and reads the tables.
@Suite("Model-based random run (PostgreSQL)", .tags(.postgres, .slow), .timeLimit(slowTestLimit))
struct PostgresBrowserModelTests {
    static func engine(_ server: PostgresServer) -> BrowserModelEngine {
        BrowserModelEngine(name: "PostgreSQL") { _, rows, options in
            var sql = """
                CREATE TABLE r(id bigint PRIMARY KEY, note text);
                INSERT INTO r SELECT x, 'r' || x FROM generate_series(-100, 5000) AS x;
                CREATE TABLE p(id bigint PRIMARY KEY, k bigint REFERENCES r(id), s text);
                CREATE TABLE q(id bigint PRIMARY KEY, k bigint REFERENCES r(id), s text);

                """
            for (t, table) in rows.enumerated() {
                for (id, row) in table.sorted(by: { $0.key < $1.key }) {
                    let k = row.k.map(String.init) ?? "NULL"
                    let s = row.s.map { postgresLiteral(.text($0)) } ?? "NULL"
                    sql += "INSERT INTO \(["p", "q"][t]) VALUES (\(id), \(k), \(s));\n"
                }
            }
            let database = try server.makeDatabase("bmodel", sql: sql)
            let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
            let browser = try Browser(context: PostgresContext(store: store), name: database, options: options, backend: MemoryTerminal(width: 80, height: 12))
            browser.start()
            let other = try server.session(database)
            return BrowserModelEngine.Session(browser: browser, write: { sql, arguments in
                // Each `?` as its value's literal (the model's SQL holds no `?` in text, and its
                // values are integers and NULL, which a bound parameter would type as text).
                var values = arguments.makeIterator()
                let literal = sql.map { c -> String in c == "?" ? postgresLiteral(values.next() ?? .null) : String(c) }.joined()
                _ = try other.execute(literal)
            }, read: { table in
                var rows: [Int64: BrowserModelEngine.Row] = [:]
                for row in try other.query("SELECT id, k, s FROM \(table)") {
                    guard let id = row[0].integerValue else { continue }
                    rows[id] = (row[1].integerValue.map { Int($0) }, row[2].textValue)
                }
                return rows
            }, close: { other.close() })
        }
    }

    @Test("the browser, the database and a plain Swift model agree after every step, over PostgreSQL")
    func modelRun() throws {
        let server = try PostgresServer.require()
        let steps = Int(ProcessInfo.processInfo.environment["FAULTLINE_MODEL_STEPS"] ?? "") ?? 1500
        let failure = try BrowserModel.check(steps: steps, seed: 11, engine: Self.engine(server))
        #expect(failure == nil, "\(failure ?? "")")
    }

    @Test("the model notices a wrong database over PostgreSQL too")
    func modelCanFail() throws {
        let server = try PostgresServer.require()
        let failure = try BrowserModel.failureOfAWrongModel(engine: Self.engine(server))
        #expect(failure?.contains("differs from the model") == true, "\(failure ?? "nil")")
    }

    @Test("F counts the result's rows, not a row another session inserted since (the server's data version lags its commit)")
    func frequencyCountsTheResultAfterAnotherSessionsInsert() throws {
        let server = try PostgresServer.require()
        let database = try server.makeDatabase("freqlag", sql: """
            CREATE TABLE p(id bigint PRIMARY KEY, k bigint);
            INSERT INTO p SELECT x, x % 3 FROM generate_series(1, 30) AS x;
            """)
        let store = try PostgresStore(url: server.url(database: database), environment: noPasswordFile)
        let browser = try Browser(context: PostgresContext(store: store), name: database, options: BrowserOptions(table: "p"), backend: MemoryTerminal(width: 80, height: 12))
        browser.start()
        #expect(browser.state.count == 30)
        // Another session's row, committed after the fetch: not in the result until r. The
        // session stays open, so the server's statistics may not have it yet (a session that
        // ends reports at once).
        let other = try server.session(database)
        defer { other.close() }
        _ = try other.execute("INSERT INTO p VALUES (31, 1)")
        browser.send([.char("c"), .char("k"), .tab, .enter, .char("F")])
        #expect(browser.state.frequencySheet?.total == 30, "\(browser.state.message ?? "")")
        browser.send([.escape, .char("r")])
        browser.send([.char("F")])
        #expect(browser.state.frequencySheet?.total == 31, "\(browser.state.message ?? "")")
    }
}
