#if canImport(Glibc)
import Glibc
#endif

/// The device nodes `directory/prefixN` (video0, event3, card1), as paths in the order of
/// their numbers (video2 before video10). What every auto-detection here scans.
func deviceNodes(in directory: String, prefix: String) -> [String] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var nodes: [(number: Int, path: String)] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name.hasPrefix(prefix), let number = Int(name.dropFirst(prefix.count)) { nodes.append((number, directory + "/" + name)) }
    }
    return nodes.sorted { $0.number < $1.number }.map(\.path)
}
