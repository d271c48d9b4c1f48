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
            let timeout = hasIdleWork ? 0 : (state.memoryPanel ? 250 : 1000)
            if let key = backend.nextKey(timeoutMilliseconds: timeout) {
                send(key)
            } else {
                tick()
                present()
            }
            if idle() { present() }
        }
    }

    private var hasIdleWork: Bool { state.eagerActive || !pendingCounts.isEmpty }

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
        apply(action(for: key))
        settle()
        if state.memoryPanel { submit(.sampleMemory); settle() }
        present()
        lastKeySeconds = environment.now() - started
        return lastKeySeconds
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
        if state.isConfirming, !wasConfirming { questionToShow = true }
    }

    /// Hands `effect` to the worker; the two the session keeps are a cancel (a flag the running
    /// open or search checks) and a table count (idle work, one between keys).
    func submit(_ effect: Effect) {
        switch effect {
        case .cancel:
            worker.cancel.set()
        case .countTable(let index):
            pendingCounts.append(index)
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
        while !worker.inbox.isEmpty {
            let (actions, lines) = worker.inbox.take(waitingUpTo: 0.05)
            for line in lines { log?(line) }
            var redraw = false
            for action in actions {
                apply(action)
                switch action {
                case .openingFirstRows, .loadProgress, .searchProgress, .frequencyProgress, .summaryProgress, .summaryRow, .writeProgress, .editProgress: redraw = true
                default: break
                }
            }
            if state.running != nil, let key = backend.nextKey(timeoutMilliseconds: 0) {
                apply(action(for: key))
                redraw = true
            }
            if redraw { present() }
        }
    }
}
