import System

/// The device nodes `directory/prefixN` (video0, event3, card1), as paths in the order of
/// their numbers (video2 before video10). What every auto-detection here scans.
public func deviceNodes(in directory: String, prefix: String) -> [String] {
    var nodes: [(number: Int, path: String)] = []
    for name in (try? Path.names(in: directory)) ?? [] {
        if name.hasPrefix(prefix), let number = Int(name.dropFirst(prefix.count)) { nodes.append((number, directory + "/" + name)) }
    }
    return nodes.sorted { $0.number < $1.number }.map(\.path)
}
