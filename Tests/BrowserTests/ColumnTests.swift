import BatchStore
import Browser
import Foundation
import Testing
import TerminalCore

/// Arranging columns in the reducer alone and on whole screens: `-` `+` `<` `>` `_` `!` `H` `L`
/// and `c` with Tab completion; each sheet keeps its own arrangement.
@Suite("Columns: hide, show, widths, freeze, jump, move")
struct ColumnTests {
    static let names = ["id", "title", "year", "genre", "rating", "votes"]

    /// Table `movie` with the six columns above, `count` rows, values `<column><row>`, loaded.
    func table(width: Int = 60, height: Int = 8, count: Int = 20) -> BrowserState {
        var s = BrowserState(width: width, height: height, databaseName: "db.sqlite")
        _ = s.reduce(.opened(table: "movie", columns: Self.names, filter: "", sort: nil, count: count, cursor: 0, readOnly: nil, message: nil, result: 1))
        load(&s)
        return s
    }

    func load(_ s: inout BrowserState) {
        let rows = s.visibleRows.map { row in RowSnapshot(id: nil, values: Self.names.map { .text("\($0)\(row)") }, exists: true) }
        _ = s.reduce(.windowLoaded(start: s.visibleRows.lowerBound, rows: rows))
    }

    func press(_ s: inout BrowserState, _ keys: [Key]) {
        for key in keys { _ = s.reduce(.key(key)) }
    }

    func press(_ s: inout BrowserState, _ text: String) { press(&s, keys(text)) }

    func screen(_ s: BrowserState) -> [String] {
        render(s, colors: false).lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
    }

    @Test("- hides the current column, the cursor stays at its place on the next one; + shows every column again, the cursor on its column")
    func hideAndShow() {
        var s = table()
        press(&s, "l-")
        #expect(s.shownColumnNames == ["id", "year", "genre", "rating", "votes"])
        #expect(s.currentColumnName == "year" && s.cursorColumn == 1)
        #expect(s.message == "hid title: 1 column hidden, + shows it again")
        press(&s, "l-")
        #expect(s.shownColumnNames == ["id", "year", "rating", "votes"] && s.currentColumnName == "rating")
        #expect(s.columnView.hidden == [1, 3])
        press(&s, "+")
        #expect(s.shownColumnNames == Self.names)
        #expect(s.currentColumnName == "rating" && s.cursorColumn == 4, "the cursor stays on its column")
        #expect(s.message == "showing every column again (2 were hidden)")
        press(&s, "+")
        #expect(s.message == "no column is hidden (- hides the current one)")
        // The last column shown cannot go.
        press(&s, "-----")
        #expect(s.shownColumnNames == ["id"])
        press(&s, "-")
        #expect(s.shownColumnNames == ["id"] && s.messageIsError)
    }

    @Test("H and L move the current column left and right and the cursor goes with it; at an edge they say so")
    func move() {
        var s = table()
        press(&s, "lL")
        #expect(s.shownColumnNames == ["id", "year", "title", "genre", "rating", "votes"])
        #expect(s.currentColumnName == "title" && s.cursorColumn == 2)
        press(&s, "HHH")
        #expect(s.shownColumnNames == ["title", "id", "year", "genre", "rating", "votes"] && s.cursorColumn == 0)
        #expect(s.message == "title is already the first column")
        // With a hidden column between, a move swaps the two shown neighbours.
        press(&s, "l-L")
        #expect(s.shownColumnNames == ["title", "genre", "year", "rating", "votes"])
        press(&s, "+")
        #expect(s.shownColumnNames == ["title", "id", "genre", "year", "rating", "votes"], "the hidden one kept its place in the order")
    }

    @Test("< > set the current column's width from what it shows, _ fits it to its values on screen and back to automatic")
    func widths() {
        var s = table()
        // title's values are "title0"…"title4": 6 wide.
        press(&s, "l>")
        #expect(s.columnView.widths == [1: 8] && s.message == "title is 8 wide (< narrows, > widens, _ fits it to its values)")
        press(&s, "<<<<<")
        #expect(s.columnView.widths == [1: 1], "never narrower than one column")
        press(&s, "_")
        #expect(s.columnView.widths == [1: 6])
        press(&s, "_")
        #expect(s.columnView.widths == [:] && s.message == "title fits the rows on screen again, up to 40 wide")
        press(&s, Array(repeating: Key.char(">"), count: 40))
        #expect(s.columnView.widths[1] == 60 - 5, "never wider than the grid right of the gutter")
    }

    @Test("! freezes the columns up to the cursor's; they stay while the others scroll; ! on the last frozen one unfreezes")
    func freeze() {
        var s = table(width: 40)
        press(&s, "l!")
        #expect(s.columnView.frozen == 2)
        press(&s, "llll")
        #expect(s.currentColumnName == "votes")
        var header = screen(s)[0]
        #expect(header.hasPrefix("  #  id  title  "), "\(header)")
        #expect(header.contains("votes") && !header.contains("year"), "\(header)")
        // Back on a frozen column: the first scrolling column shown is the one left there.
        press(&s, "hhhh")
        #expect(s.currentColumnName == "title")
        header = screen(s)[0]
        #expect(header.hasPrefix("  #  id  title  year"), "\(header)")
        press(&s, "!")
        #expect(s.columnView.frozen == 0 && s.message == "no column is frozen")
        press(&s, "llll")
        header = screen(s)[0]
        #expect(!header.contains(" id "), "unfrozen, id scrolls away: \(header)")
    }

    @Test("! refuses to freeze columns that would not leave the others room")
    func freezeTooWide() {
        var s = table(width: 24)
        press(&s, "lll!")
        #expect(s.columnView.frozen == 0 && s.messageIsError)
        #expect(s.message == "the first 4 columns are too wide to stay: they would leave the others too little room (< narrows, - hides)")
        press(&s, "h!")
        #expect(s.columnView.frozen == 0 && s.messageIsError, "id, title and year would leave 3 columns of 24, fewer than 8")
        press(&s, "h!")
        #expect(s.columnView.frozen == 2 && !s.messageIsError)
        // Every frozen column stays on screen with the cursor right of them.
        press(&s, "llll")
        #expect(s.currentColumnName == "votes" && screen(s)[0] == "  #  id  title  votes", "\(screen(s)[0])")
    }

    @Test("when columns go (hidden, or unfrozen) and room is left at the right, the grid scrolls back to fill it")
    func scrollsBack() {
        var s = table(width: 40)
        press(&s, "lllll")
        #expect(!screen(s)[0].contains(" id "))
        press(&s, "h-h-")
        #expect(s.shownColumnNames == ["id", "title", "year", "votes"] && s.currentColumnName == "votes")
        #expect(screen(s)[0] == "  #  id  title  year  votes", "everything fits again: \(screen(s)[0])")
        // Every column frozen, then none: the first ones come back into view.
        var t = table(width: 60)
        press(&t, "lllll!")
        #expect(t.columnView.frozen == 6)
        press(&t, "!")
        #expect(t.columnView.frozen == 0 && screen(t)[0] == "  #  id  title  year  genre  rating  votes")
    }

    @Test("c jumps to a column by name: exact, unique prefix or substring, ignoring case; Tab completes; a hidden column is shown again")
    func jump() {
        var s = table()
        press(&s, "cgen")
        #expect(s.mode == .prompt(.column, text: "gen"))
        #expect(screen(s).last == "column: gen   genre")
        press(&s, [.enter])
        #expect(s.currentColumnName == "genre" && s.message == "column genre")
        press(&s, "cVOT")
        press(&s, [.enter])
        #expect(s.currentColumnName == "votes")
        press(&s, "citl")
        press(&s, [.enter])
        #expect(s.currentColumnName == "title", "a substring when no name starts with it")
        press(&s, "cr")
        press(&s, [.tab])
        #expect(s.mode == .prompt(.column, text: "rating"), "one name starts with r")
        press(&s, [.escape])
        press(&s, "ce")
        press(&s, [.enter])
        #expect(s.messageIsError && s.message == "e matches 4 columns: title, year, genre, votes; Tab completes")
        #expect(s.currentColumnName == "title", "the cursor stays")
        #expect(s.mode == .prompt(.column, text: "e"), "the prompt stays, holding what was typed")
        press(&s, [.escape])
        press(&s, "cnope")
        press(&s, [.enter])
        #expect(s.messageIsError && s.message == "no column matches nope")
        press(&s, [.escape])
        // A hidden column comes back when jumped to.
        press(&s, "cyear")
        press(&s, [.enter, .char("-")])
        #expect(!s.shownColumnNames.contains("year"))
        press(&s, "cyea")
        press(&s, [.enter])
        #expect(s.currentColumnName == "year" && s.shownColumnNames == Self.names)
        #expect(s.message == "column year (it was hidden: shown again)")
    }

    @Test("Tab completes to what the matching names share")
    func completion() {
        var s = BrowserState(width: 60, height: 8)
        _ = s.reduce(.opened(table: "t", columns: ["director_id", "director_name", "title"], filter: "", sort: nil, count: 1, cursor: 0, readOnly: nil, message: nil))
        press(&s, "cd")
        press(&s, [.tab])
        #expect(s.mode == .prompt(.column, text: "director_"))
        press(&s, [.tab])
        #expect(s.mode == .prompt(.column, text: "director_"), "nothing more to add")
        press(&s, "n")
        press(&s, [.tab])
        #expect(s.mode == .prompt(.column, text: "director_name"))
    }

    @Test("the arrangement stays with the sheet: a frequency sheet has its own, and Esc back, a new filter or sort keep the table's; another table starts afresh")
    func staysWithTheSheet() {
        var s = table()
        press(&s, "l-L!>")
        let view = s.columnView
        #expect(s.shownColumnNames == ["id", "genre", "year", "rating", "votes"])
        #expect(view.frozen == 3 && view.widths.keys.sorted() == [2] && view.hidden == [1])
        #expect(s.reduce(.key(.char("F"))).contains(.frequency(column: "year", result: 1)))
        _ = s.reduce(.frequencyOpened(column: "year", values: 3, total: 20, result: 2, seconds: 0))
        #expect(s.columnView == ColumnView(count: 4) && s.shownColumnNames == ["year", "count", "percent", "histogram"])
        press(&s, "l-")
        #expect(s.shownColumnNames == ["year", "percent", "histogram"])
        _ = s.reduce(.key(.escape))
        #expect(s.columnView == view && s.currentColumnName == "year" && s.cursorColumn == 2)
        // The same table again (a filter): kept.
        _ = s.reduce(.opened(table: "movie", columns: Self.names, filter: "year > 1", sort: nil, count: 5, cursor: 0, readOnly: nil, message: nil, result: 3))
        #expect(s.columnView == view && s.currentColumnName == "year")
        _ = s.reduce(.opened(table: "other", columns: ["a", "b"], filter: "", sort: nil, count: 5, cursor: 0, readOnly: nil, message: nil, result: 4))
        #expect(s.columnView == ColumnView(count: 2) && s.cursorColumn == 0)
        // Back to movie (as from the table list): its arrangement, as it was left.
        _ = s.reduce(.opened(table: "movie", columns: Self.names, filter: "", sort: nil, count: 20, cursor: 0, readOnly: nil, message: nil, result: 5))
        #expect(s.columnView == view)
    }

    @Test("a value's rows, opened from a frequency sheet, show the table's columns as arranged below")
    func valueRowsInherit() {
        var s = table()
        press(&s, "l-!")
        let view = s.columnView
        _ = s.reduce(.frequencyOpened(column: "year", values: 3, total: 20, result: 2, seconds: 0))
        _ = s.reduce(.opened(table: "movie", columns: Self.names, filter: "year == 1", sort: nil, count: 2, cursor: 0, readOnly: nil, message: nil,
                             result: 3, pushed: true))
        #expect(s.sheetDepth == 2 && s.columnView == view && s.shownColumnNames == ["id", "year", "genre", "rating", "votes"])
        press(&s, "+")
        _ = s.reduce(.key(.escape))
        _ = s.reduce(.key(.escape))
        #expect(s.columnView == view, "the table's own arrangement is its own")
    }

    @Test("Enter on a summary row goes to its column in the table's arrangement, showing it if it was hidden")
    func summaryEnter() {
        var s = table()
        press(&s, "lll-L")      // genre hidden; rating after votes
        #expect(s.shownColumnNames == ["id", "title", "year", "votes", "rating"])
        #expect(s.reduce(.key(.char("I"))) == [.summarize(columns: Self.names, result: 1)])
        #expect(s.cursorRow == Self.names.firstIndex(of: "rating"), "the sheet opens on the row of rating, the column the cursor was on")
        press(&s, "gjjj")       // the summary's row of genre
        _ = s.reduce(.key(.enter))
        #expect(s.sheet == .table && s.currentColumnName == "genre")
        #expect(s.shownColumnNames == ["id", "title", "year", "genre", "votes", "rating"], "shown again where it was")
        press(&s, "I")
        press(&s, "gjjjj")      // rating
        _ = s.reduce(.key(.enter))
        #expect(s.currentColumnName == "rating" && s.cursorColumn == 5)
    }

    @Test("whole screen: hidden, moved, widened and frozen columns, the cursor's column highlighted by position")
    func wholeScreen() {
        var s = table(width: 30, height: 7, count: 3)
        press(&s, "l-")        // hide title
        press(&s, "LL")        // year after rating
        press(&s, "<")         // year 3 wide
        press(&s, "hhh!")      // freeze id
        press(&s, "llll")      // to votes: the frozen id stays
        // id stays at the left; genre scrolled away; year is 3 wide, cut with an ellipsis.
        #expect(screen(s) == [
            "  #  id  rating  ye… votes",
            "  1  id0 rating0 ye… votes0",
            "  2  id1 rating1 ye… votes1",
            "  3  id2 rating2 ye… votes2",
            "",
            " movie │ row 1 of 3    ? help",
            "",
        ])
        let frame = render(s, colors: true)
        // votes (shown 5th, the table's 6th) is the highlighted header and cell; rating (the table's 5th) is not.
        #expect(frame[21, 0].style.reverse && frame[21, 1].style.reverse)
        #expect(!frame[9, 0].style.reverse && !frame[5, 0].style.reverse)
    }
}
