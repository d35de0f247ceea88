/// What a run has opened, closed in the reverse of the order it was opened, exactly once,
/// on every path: a start that fails half-way, a signal, a long press, a fatal error.
final class Teardown {
    private var steps: [(name: String, close: () -> Void)] = []

    /// Adds how to close what was just opened. The same `name` again replaces the earlier
    /// step and moves it here: a capture stopped on its own while the start can still be
    /// abandoned is, once the pipeline takes its frames, stopped before the pipeline.
    func add(_ name: String, _ close: @escaping () -> Void) {
        steps.removeAll { $0.name == name }
        steps.append((name, close))
    }

    /// Adds a step that runs right after `other` closes (or now-last, without it): what
    /// must outlive it, such as the signal thread, which can still cut the pipeline's
    /// drain short.
    func add(_ name: String, before other: String, _ close: @escaping () -> Void) {
        steps.removeAll { $0.name == name }
        steps.insert((name, close), at: steps.firstIndex { $0.name == other } ?? steps.count)
    }

    /// What is still open, in the order it would be closed.
    var pending: [String] { steps.reversed().map(\.name) }

    /// Closes everything, newest first; a second call finds nothing left.
    func run() {
        while let step = steps.popLast() { step.close() }
    }
}

/// Why a run ended early, said on one line; the exit status is decided from it in one
/// place (`Runner.run`): 2 for usage and configuration (a flag, a file, a device that will
/// not open, a port in use), 1 for a failure at run time.
enum RunFailure: Error, CustomStringConvertible {
    /// A flag, a file, a device that will not open, a port in use: exit 2.
    case configuration(String)
    /// A failure while running: exit 1.
    case runtime(String)

    static func configuration(_ error: any Error) -> RunFailure { .configuration("\(error)") }
    static func runtime(_ error: any Error) -> RunFailure { .runtime("\(error)") }

    var description: String {
        switch self {
        case .configuration(let text), .runtime(let text): return text
        }
    }

    var status: Int32 {
        switch self {
        case .configuration: return 2
        case .runtime: return 1
        }
    }
}
