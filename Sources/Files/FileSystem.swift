#if canImport(Glibc)
import Glibc
#endif

/// The file system through POSIX calls: what onair reads, lists and removes. (Writes that
/// readers see go through `AtomicFile`.) Errors other than "not there" are `FileError`s
/// naming the path.
public enum FileSystem {
    /// Why a file was not read: each is a one-line reason, and none of them took long or
    /// took much memory to find.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        /// Nothing there.
        case missing
        /// There, but not a regular file (a FIFO, a device, a directory, a socket), or a
        /// symbolic link where none belongs.
        case notRegular(String)
        /// Larger than the reader takes (or grew past it while being read).
        case tooLarge(limit: Int)
        /// open or read failed otherwise (errno).
        case failed(Int32)

        /// The nearest errno, for a `FileError`.
        var code: Int32 {
            switch self {
            case .missing: return ENOENT
            case .notRegular: return EINVAL
            case .tooLarge: return EFBIG
            case .failed(let code): return code
            }
        }

        public var description: String {
            switch self {
            case .missing: return String(cString: strerror(ENOENT))
            case .notRegular(let kind): return "\(kind), not a regular file"
            case .tooLarge(let limit): return "larger than \(limit >= 1 << 20 ? "\(limit >> 20) MiB" : "\(limit) bytes")"
            case .failed(let code): return String(cString: strerror(code))
            }
        }
    }

    /// What one file of a kind may hold: a stream's playlist (three weeks of 2 s
    /// segments) or media segment (2 s at 250 Mbit/s), and the small files (onair.conf,
    /// an init segment, a JSON index, a sysfs value).
    public static let playlistLimit = 64 << 20
    public static let segmentLimit = 64 << 20
    public static let smallLimit = 1 << 20

    /// The whole of a regular file of at most `limit` bytes, read in 64 KiB chunks. Opened
    /// O_NONBLOCK, so a FIFO in its place cannot block the open, and O_NOFOLLOW unless
    /// `followLinks` (the data directory holds no links: one there was not made by onair);
    /// a FIFO, a device or a directory is refused by fstat before a byte is read, and a
    /// file over `limit` by its size, or as soon as it grows past it.
    /// (Throws a `Refusal`, untyped: Swift 6.0.3's SIL verifier crashes on some catches of
    /// a typed throw.)
    public static func readRegular(_ path: String, limit: Int, followLinks: Bool = true) throws -> [UInt8] {
        let (fd, size) = try openRegular(path, followLinks: followLinks)
        defer { close(fd) }
        guard size <= limit else { throw Refusal.tooLarge(limit: limit) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(size))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Refusal.failed(errno)
            }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else { throw Refusal.tooLarge(limit: limit) }
            bytes += chunk[0..<n]
        }
    }

    /// A regular file opened for reading (O_NONBLOCK, so a FIFO cannot block the open;
    /// O_NOFOLLOW unless `followLinks`), and its size; the caller closes it. Anything but
    /// a regular file is refused before it is read.
    public static func openRegular(_ path: String, followLinks: Bool = true) throws -> (fd: Int32, size: Int64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: throw Refusal.missing
            case ELOOP: throw Refusal.notRegular(followLinks ? "a loop of symbolic links" : "a symbolic link")
            case let code: throw Refusal.failed(code)
            }
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw Refusal.failed(code)
        }
        let kind: String
        switch info.st_mode & S_IFMT {
        case S_IFREG: return (fd, Int64(info.st_size))
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO"
        case S_IFCHR, S_IFBLK: kind = "a device"
        case S_IFSOCK: kind = "a socket"
        default: kind = "a special file"
        }
        close(fd)
        throw Refusal.notRegular(kind)
    }

    /// `openRegular` for readers whose errors name their file: a refusal is a `FileError`
    /// (`open <path>: a FIFO, not a regular file`).
    public static func openRegularNamed(_ path: String, followLinks: Bool = true) throws -> (fd: Int32, size: Int64) {
        do { return try openRegular(path, followLinks: followLinks) } catch {
            throw FileError(path: path, operation: "open", code: (error as? Refusal)?.code ?? EIO, detail: "\(error)")
        }
    }

    /// The same, nil for any refusal: for readers to which a file that cannot be read is
    /// one that is not there.
    public static func read(_ path: String, limit: Int = playlistLimit, followLinks: Bool = true) -> [UInt8]? {
        try? readRegular(path, limit: limit, followLinks: followLinks)
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
    public static func readText(_ path: String, limit: Int = playlistLimit, followLinks: Bool = true) -> String? {
        read(path, limit: limit, followLinks: followLinks).map { String(decoding: $0, as: UTF8.self) }
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

    /// A file's modification time (s, ns) and size: what changes when another process
    /// rewrites it; empty when it cannot be looked at.
    public static func changeStamp(_ path: String) -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return [info.st_mtim.tv_sec, info.st_mtim.tv_nsec, Int(info.st_size)]
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
