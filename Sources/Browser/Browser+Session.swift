import BatchStore
import TerminalCore

extension Browser {
    /// Opens the starting table (or the table list) and draws the first frame.
    public func start() {
        if let table = options.table ?? (tableNames.count == 1 ? tableNames.first : nil) {
            do {
                let sorts = try options.sort.map { try SortDescriptor.parse($0) } ?? []
                submit(.open(table: table, filter: options.filter, sort: sorts.first, thenBy: Array(sorts.dropFirst())))
            } catch let error as BatchStoreError {
                apply(.failed(error.message))
            } catch {
                apply(.failed("\(error)"))
            }
        } else {
            submit(.listTables)
        }
        settle()
        // After the first result, so a problem with the file is the message on screen.
        if let path = options.historyPath {
            let (history, problem) = HistoryFile(path: path).load()
            apply(.historyLoaded(history, problem: problem))
        }
        present()
    }

    /// Runs until `q`: waits for keys, samples memory and watches the file between them.
    public func run() {
        while !state.quit {
            let reading = !worker.inbox.isEmpty
            let timeout = hasIdleWork ? 0 : (reading ? 20 : state.memoryPanel ? 250 : 1000)
            if let key = backend.nextKey(timeoutMilliseconds: timeout) {
                sendBurst(key)
            } else if reading {
                // A second thread's read ended (or goes on): what it brought, drawn.
                takeArrived()
            } else {
                tick()
                present()
            }
            if idle() { present() }
        }
        // Last: a file deleted or replaced since the last look must not keep this session's WAL frames at its path.
        worker.submit(.watchFile, state: state)
        settle()
    }

    private var hasIdleWork: Bool { state.eagerActive || !pendingCounts.isEmpty }

    /// Reduces and draws what reads on the second thread sent back so far, without waiting.
    private func takeArrived() {
        let (actions, lines) = worker.inbox.take(waitingUpTo: 0)
        for line in lines { log?(line) }
        for action in actions { apply(action) }
        if !actions.isEmpty { present() }
    }

    /// Waits for the reads on the second thread too, and reduces what they bring (tests, the
    /// benchmark: a match count is then on the status line).
    package func settleReads() {
        while !worker.inbox.isEmpty {
            let (actions, lines) = worker.inbox.take(waitingUpTo: 0.05)
            for line in lines { log?(line) }
            for action in actions { apply(action) }
        }
        settle()
        present()
    }

    /// Does one piece of background work (a table count for the picker, a step of the eager
    /// copy), so keys stay responsive; false when there was none.
    @discardableResult
    package func idle() -> Bool {
        if !pendingCounts.isEmpty {
            worker.submit(.countTable(index: pendingCounts.removeFirst()), state: state)
        } else if state.eagerActive {
            worker.submit(.eagerStep, state: state)
        } else {
            return false
        }
        settle()
        return true
    }

    /// Handles one key completely: reduce, effects, frame. Returns the frame time.
    @discardableResult
    public func send(_ key: Key) -> Double {
        let started = environment.now()
        handle(key)
        present()
        lastKeySeconds = environment.now() - started
        return lastKeySeconds
    }

    /// Handles one key completely but the frame: reduce, effects, and the keys that waited.
    private func handle(_ key: Key) {
        // Behind keys still waiting for work to end: in the order typed (settle applies them).
        if !state.queuedKeys.isEmpty, key != .resize, state.running == nil {
            state.queuedKeys.append(key)
        } else {
            apply(action(for: key))
        }
        settle()
        if state.memoryPanel { submit(.sampleMemory); settle() }
    }

    /// `key` and the keys already typed after it (a paste, a fast hand), acted on one after
    /// another with the frame drawn once, after them: a paste of thousands of characters does
    /// not draw a frame per character. A question that opens is drawn at once (it takes only
    /// keys pressed once it is on screen), and so is a frame every 50 ms of a long burst.
    package func sendBurst(_ key: Key) {
        let started = environment.now()
        var next: Key? = key
        while let key = next {
            next = nil
            if case .char(let c) = key, state.isInTextPrompt, state.running == nil, state.queuedKeys.isEmpty {
                // Characters into a text prompt (a paste) go in together: one edit of the line,
                // not one per character, so a long paste costs what its length costs.
                var text = String(c)
                while let more = backend.nextKey(timeoutMilliseconds: 0) {
                    guard case .char(let d) = more else { next = more; break }
                    text.append(d)
                }
                apply(.typed(text))
                settle()
            } else {
                handle(key)
            }
            guard !state.quit, !questionToShow else { break }   // a key read after the text goes with the type-ahead
            if environment.now() - started >= 0.05 {
                // A frame now; a key already read after the text still acts.
                if let key = next { handle(key) }
                break
            }
            if next == nil { next = backend.nextKey(timeoutMilliseconds: 0) }
        }
        present()
        lastKeySeconds = environment.now() - started
    }

    /// Sends several keys (tests, the benchmark).
    package func send(_ keys: [Key]) {
        for key in keys { send(key) }
    }

    /// Between keys: memory sample when the panel is open, and `PRAGMA data_version` once a second.
    package func tick() {
        if state.memoryPanel { submit(.sampleMemory) }
        let now = environment.now()
        if now - lastFileCheck >= 1 {
            lastFileCheck = now
            worker.submit(.watchFile, state: state)
        }
        settle()
    }

    /// Applies `action` and everything it leads to.
    package func dispatch(_ action: Action) {
        apply(action)
        settle()
    }

    package func present() {
        backend.present(render(state, colors: backend.colorsEnabled))
        // A confirmation takes only a key pressed once it is on screen: what was typed before
        // this frame showed it (a burst meant for the grid) is thrown away, so it cannot answer.
        if questionToShow {
            questionToShow = false
            backend.discardTypeAhead()
        }
    }

    private func action(for key: Key) -> Action {
        guard key == .resize else { return .key(key) }
        let size = backend.size
        return .resized(width: size.width, height: size.height)
    }

    /// Reduces `action` and hands its effects on; the one place the state changes.
    func apply(_ action: Action) {
        // The one output that is not a frame: text for the clipboard, through the backend.
        if case .clipboard(let payload) = action { backend.setClipboard(base64: payload); return }
        let wasConfirming = state.isConfirming
        for effect in state.reduce(action) { submit(effect) }
        if state.isConfirming, !wasConfirming {
            questionToShow = true
            // Keys typed before the question was on screen never answer it (nor act after it).
            state.dropQueuedKeys()
        }
    }

    /// Hands `effect` to the worker; the two the session keeps are a cancel (a flag the running
    /// open or search checks) and a table count (idle work, one between keys).
    func submit(_ effect: Effect) {
        switch effect {
        case .cancel:
            worker.cancel.set()
        case .countTable(let index):
            pendingCounts.append(index)
        case .peekLast, .countMatches, .peekRows:
            worker.peek(effect)
        case .open, .search, .frequency, .openValue, .summarize, .openRelated, .write, .copy, .binFrequency,
             .countDelete, .runDelete, .countUpdate, .runUpdate, .countUndo, .undo, .reload, .recount:
            worker.cancel.clear()
            worker.submit(.effect(effect), state: state)
        default:
            worker.submit(.effect(effect), state: state)
        }
    }

    /// Waits for every effect under way, reducing what comes back in order. While an open or a
    /// search runs, its progress is drawn and keys are read: Esc cancels it, a resize redraws.
    func settle() {
        repeat {
            drainInbox()
            // Keys typed while the work ran act now, one by one, each with what it starts.
            guard let key = state.takeQueuedKey() else { return }
            apply(action(for: key))
            present()
        } while true
    }

    /// Reduces what the worker sends back until it has nothing under way; keys read meanwhile
    /// cancel (Esc, Ctrl-C, q) or wait in ``BrowserState/queuedKeys``.
    ///
    /// While work runs, the wait for the worker is 10 ms at most, and then every key typed so far
    /// is read, all of a burst before one frame: a key that acts at once is on screen within
    /// about 10 ms (reading one key per 50 ms wait let keys typed every 20 ms queue up: 155 ms
    /// p50 from key to frame during a 1M-row sort's load).
    ///
    /// Reads on the second thread (a search's match count, `:N`'s read-ahead) are not waited for
    /// once no other work runs: what they bring is reduced when it comes, between keys.
    private func drainInbox() {
        while !worker.inbox.isEmpty {
            if state.running == nil, worker.inbox.onlyPeeksRun { return }
            let (actions, lines) = worker.inbox.take(waitingUpTo: state.running == nil ? 0.05 : 0.01)
            for line in lines { log?(line) }
            var redraw = false
            for action in actions {
                apply(action)
                switch action {
                case .openingFirstRows, .loadProgress, .searchProgress, .frequencyProgress, .summaryProgress, .summaryRow, .writeProgress, .editProgress: redraw = true
                default: break
                }
            }
            if state.running != nil {
                while let key = backend.nextKey(timeoutMilliseconds: 0) {
                    apply(action(for: key))
                    redraw = true
                    if state.running == nil { break }
                }
            }
            if redraw { present() }
        }
    }
}
