#if canImport(Glibc)
import Glibc
#endif

/// The system calls that act on a path rather than an open file. Each throws the call's
/// `Errno`; the caller names the path in its own error.
public enum Path {
    /// stat(2), or lstat(2) when `followLinks` is false.
    public static func status(_ path: String, followLinks: Bool = true) throws -> FileStatus {
        var info = stat()
        _ = try retrying { followLinks ? stat(path, &info) : lstat(path, &info) }
        return FileStatus(info)
    }

    /// The path exists (stat(2) succeeds, links followed).
    public static func exists(_ path: String) -> Bool { (try? status(path)) != nil }

    /// access(2) R_OK: this process may read the file (a device node it must open).
    public static func checkReadable(_ path: String) throws { _ = try retrying { access(path, R_OK) } }

    /// rename(2): atomic within a file system; `.crossDevice` across two.
    public static func rename(_ from: String, to: String) throws { _ = try once { Glibc.rename(from, to) } }

    /// link(2): a second name for the same file; `.exists` when the new name is taken.
    public static func link(_ existing: String, as new: String) throws { _ = try once { Glibc.link(existing, new) } }

    /// unlink(2).
    public static func unlink(_ path: String) throws { _ = try once { Glibc.unlink(path) } }

    /// unlink(2), for a path that may already be gone: only other failures are thrown.
    public static func removeIfPresent(_ path: String) throws {
        do { try unlink(path) } catch let error as Errno where error == .noEntry {}
    }

    /// mkdir(2); `.exists` when something has the name.
    public static func makeDirectory(_ path: String, permissions: mode_t = 0o755) throws {
        _ = try once { mkdir(path, permissions) }
    }

    /// rmdir(2): the directory must be empty.
    public static func removeDirectory(_ path: String) throws { _ = try once { rmdir(path) } }

    /// The names in a directory (not "." and ".."), in no particular order
    /// (opendir(3)/readdir(3)).
    public static func names(in directory: String) throws -> [String] {
        guard let dir = opendir(directory) else { throw Errno.current }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// realpath(3): absolute, with every link and `..` resolved; throws when a component
    /// is missing.
    public static func resolved(_ path: String) throws -> String {
        guard let real = realpath(path, nil) else { throw Errno.current }
        defer { free(real) }
        return String(cString: real)
    }

    /// readlink(2): where a symbolic link points.
    public static func linkTarget(_ path: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = try once { readlink(path, &buffer, buffer.count - 1) }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// statvfs(3) of the file system holding `path`.
    public static func fileSystemStatus(_ path: String) throws -> FileSystemStatus {
        var info = statvfs()
        _ = try retrying { statvfs(path, &info) }
        let block = Int64(info.f_frsize)
        return FileSystemStatus(available: Int64(info.f_bavail) * block, total: Int64(info.f_blocks) * block)
    }
}
