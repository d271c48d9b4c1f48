import BatchStore
@testable import BatchStorePostgres
import Foundation
import Testing
import TestSupport

/// The `pg_temp` text functions' tables are Foundation's folding and case mapping of every code
/// point of planes 0 and 1, computed here (2.5 s) and written to `PostgresTextFunctions+Tables.swift`,
/// so a session installs them without computing them. This checks, on every run, that the
/// written tables are what this machine's Foundation gives; with
/// `FAULTLINE_WRITE_TEXT_FUNCTIONS=1` it writes them again.
@Suite(.tags(.postgres), .timeLimit(slowTestLimit)) struct TextFunctionTablesTests {
    @Test("the written text function tables are exactly what Foundation gives for every code point")
    func writtenTablesAreFoundations() throws {
        let computed = PostgresTextFunctions.computeStatements()
        if ProcessInfo.processInfo.environment["FAULTLINE_WRITE_TEXT_FUNCTIONS"] == "1" {
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Sources/BatchStorePostgres/Connection/PostgresTextFunctions+Tables.swift")
            try Self.source(computed).write(to: file, atomically: true, encoding: .utf8)
        }
        // Compared as a Bool: a failure names the first function that differs, not 130 KB of SQL.
        let written = PostgresTextFunctions.tableStatements
        let differing = zip(computed, written).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? (computed.count == written.count ? nil : min(computed.count, written.count))
        #expect(differing == nil, "the written table of \(differing.map { PostgresTextFunctions.functions[min($0, PostgresTextFunctions.functions.count - 1)].name } ?? "") differs from this Foundation's: run FAULTLINE_WRITE_TEXT_FUNCTIONS=1 swift test --filter TextFunctionTablesTests, and review the change")
    }

    /// Swift source holding `statements`, every character past printable ASCII (and `\` and `"`)
    /// written as an escape, so no line separator or mark ever sits raw in the file.
    static func source(_ statements: [String]) -> String {
        func literal(_ s: String) -> String {
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\\": out += "\\\\"
                case "\"": out += "\\\""
                case "\n": out += "\\n"
                case " "..."~": out.unicodeScalars.append(scalar)
                default: out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
                }
            }
            return out + "\""
        }
        var lines = [
            "// Written by TextFunctionTablesTests (FAULTLINE_WRITE_TEXT_FUNCTIONS=1 swift test --filter TextFunctionTablesTests):",
            "// PostgresTextFunctions.computeStatements() as this machine's Foundation gives them. Do not edit.",
            "extension PostgresTextFunctions {",
            "    package static let tableStatements: [String] = [",
        ]
        for statement in statements { lines.append("        " + literal(statement) + ",") }
        lines += ["    ]", "}", ""]
        return lines.joined(separator: "\n")
    }
}
