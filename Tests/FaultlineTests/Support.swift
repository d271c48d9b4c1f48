// Temporary folders, the faultline binary, processes and tmux: shared with the other test targets.
@_exported import TestSupport
