#if canImport(Glibc)
import Glibc
#endif

/// The process's environment (environ(7)), read once where it is needed: the systemd
/// notify socket, the cache folder, the operator's console.
public enum Environment {
    public static var variables: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}
