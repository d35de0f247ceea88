import Threading

/// Log lines, gathered from whichever thread writes them.
public final class Captured: Sendable {
    private let all = Locked<[String]>([])
    public init() {}
    public func add(_ line: String) { all.withLock { $0.append(line) } }
    public var lines: [String] { all.withLock { $0 } }
}
