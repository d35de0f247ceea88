#if canImport(Glibc)
import Glibc
#endif

/// The file system through POSIX calls: what onair reads, lists and removes. (Writes that
/// readers see go through `AtomicFile`.) Errors other than "not there" are `FileError`s
/// naming the path.
public enum FileSystem {
    /// The whole file, or nil when it cannot be opened or read.
    public static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT != S_IFDIR else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(max(Int(info.st_size), 0))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
        }
    }

    /// Writes the whole file in place (created or truncated), without fsync: for files no
    /// other program reads mid-write (see `AtomicFile` for those).
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: path, operation: "create", code: errno) }
        defer { close(fd) }
        try bytes.withUnsafeBytes { try AtomicFile.writeAll(fd, $0, path: path) }
    }

    /// The whole file as UTF-8 text (invalid bytes replaced), or nil.
    public static func readText(_ path: String) -> String? {
        read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// The size of a file in bytes; nil when it cannot be looked at.
    public static func size(_ path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// The names in a directory (not "." and ".."), in no particular order; nil when it
    /// cannot be opened.
    public static func names(in directory: String) -> [String]? {
        guard let dir = opendir(directory) else { return nil }
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

    /// Every file below `directory`, as paths relative to it; symbolic links are not
    /// followed.
    public static func filesBelow(_ directory: String) -> [String] {
        var found: [String] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let path = relative.isEmpty ? directory : directory + "/" + relative
            for name in names(in: path) ?? [] {
                let child = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard lstat(directory + "/" + child, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR { pending.append(child) } else { found.append(child) }
            }
        }
        return found
    }

    /// Exactly `count` bytes at `offset` of an open file into `buffer` (pread(2), EINTR
    /// retried); a file shorter than that is an EIO naming `path`.
    public static func read(_ fd: Int32, at offset: Int64, into buffer: UnsafeMutableRawPointer, count: Int, path: String) throws {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + Int64(done)))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw FileError(path: path, operation: "read", code: n < 0 ? errno : EIO) }
            done += n
        }
    }

    /// The same, as bytes.
    public static func read(_ fd: Int32, at offset: Int64, count: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBytes { try read(fd, at: offset, into: $0.baseAddress!, count: count, path: path) }
        return bytes
    }

    /// rm -r: the file, or the directory and everything below it (links are removed, not
    /// followed). Nothing there is not an error.
    public static func remove(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw FileError(path: path, operation: "stat", code: errno)
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            for name in names(in: path) ?? [] { try remove(path + "/" + name) }
            guard rmdir(path) == 0 || errno == ENOENT else { throw FileError(path: path, operation: "remove", code: errno) }
        } else {
            guard unlink(path) == 0 || errno == ENOENT else { throw FileError(path: path, operation: "remove", code: errno) }
        }
    }
}
