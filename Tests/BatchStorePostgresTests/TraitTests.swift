import Testing

#if !PostgreSQL
/// Without the `PostgreSQL` trait the `faultline` binary the command-line suites run refuses every
/// URL; say so once instead of letting each of them fail on it.
@Suite("Built with PostgreSQL")
struct TraitTests {
    @Test("the tests were built with the PostgreSQL trait")
    func builtWithTheTrait() {
        Issue.record("these tests need the PostgreSQL trait: run `make test`, or `swift build --build-tests --traits PostgreSQL` and `swift test --traits PostgreSQL`")
    }
}
#endif
