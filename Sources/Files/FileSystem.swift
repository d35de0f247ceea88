import System

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
        /// open or read failed otherwise.
        case failed(Errno)

        /// The nearest errno, for a `FileError`.
        var code: Errno {
            switch self {
            case .missing: return .noEntry
            case .notRegular: return .invalid
            case .tooLarge: return .tooBig
            case .failed(let code): return code
            }
        }

        public var description: String {
            switch self {
            case .missing: return Errno.noEntry.description
            case .notRegular(let kind): return "\(kind), not a regular file"
            case .tooLarge(let limit): return "larger than \(limit >= 1 << 20 ? "\(limit >> 20) MiB" : "\(limit) bytes")"
            case .failed(let code): return code.description
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
        defer { fd.close() }
        guard size <= limit else { throw Refusal.tooLarge(limit: limit) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(size))
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n: Int
            do { n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) } } catch let error as Errno { throw Refusal.failed(error) }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else { throw Refusal.tooLarge(limit: limit) }
            bytes += chunk[0..<n]
        }
    }

    /// A regular file opened for reading (O_NONBLOCK, so a FIFO cannot block the open;
    /// O_NOFOLLOW unless `followLinks`), and its size; the caller closes it. Anything but
    /// a regular file is refused before it is read.
    public static func openRegular(_ path: String, followLinks: Bool = true) throws -> (fd: FileDescriptor, size: Int64) {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, .readOnly, options: followLinks ? [.nonBlocking] : [.nonBlocking, .noFollow])
        } catch let error as Errno {
            switch error {
            case .noEntry, .notDirectory: throw Refusal.missing
            case .loop: throw Refusal.notRegular(followLinks ? "a loop of symbolic links" : "a symbolic link")
            default: throw Refusal.failed(error)
            }
        }
        let status: FileStatus
        do { status = try fd.status() } catch let error as Errno { throw Refusal.failed(error) }
        guard status.kind == .regular else { throw Refusal.notRegular(status.kind.article) }
        return (fd, status.size)
    }

    /// `openRegular` for readers whose errors name their file: a refusal is a `FileError`
    /// (`open <path>: a FIFO, not a regular file`).
    public static func openRegularNamed(_ path: String, followLinks: Bool = true) throws -> (fd: FileDescriptor, size: Int64) {
        do { return try openRegular(path, followLinks: followLinks) } catch {
            throw FileError(path: path, operation: "open", code: (error as? Refusal)?.code ?? .ioError, detail: "\(error)")
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
        let fd = try FileError.at(path, "create") { try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate]) }
        try FileError.at(path, "write") { try fd.writeAll(bytes) }
    }

    /// The whole file as UTF-8 text (invalid bytes replaced), or nil.
    public static func readText(_ path: String, limit: Int = playlistLimit, followLinks: Bool = true) -> String? {
        read(path, limit: limit, followLinks: followLinks).map { String(decoding: $0, as: UTF8.self) }
    }

    public static func exists(_ path: String) -> Bool { Path.exists(path) }

    /// The size of a file in bytes; nil when it cannot be looked at.
    public static func size(_ path: String) -> Int64? { (try? Path.status(path))?.size }

    /// A file's modification time (s, ns) and size: what changes when another process
    /// rewrites it; empty when it cannot be looked at.
    public static func changeStamp(_ path: String) -> [Int] {
        guard let status = try? Path.status(path) else { return [] }
        return [status.modifiedSeconds, status.modifiedNanoseconds, Int(status.size)]
    }

    public static func isDirectory(_ path: String) -> Bool { (try? Path.status(path))?.kind == .directory }

    /// What is at `path` (lstat(2): a link is itself); nil when nothing is, or it cannot be
    /// looked at.
    public static func kind(_ path: String) -> FileStatus.Kind? { (try? Path.status(path, followLinks: false))?.kind }

    /// The names in a directory (not "." and ".."), in no particular order; nil when it
    /// cannot be opened.
    public static func names(in directory: String) -> [String]? { try? Path.names(in: directory) }

    /// Every file below `directory`, as paths relative to it; symbolic links are not
    /// followed.
    public static func filesBelow(_ directory: String) -> [String] {
        var found: [String] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let path = relative.isEmpty ? directory : directory + "/" + relative
            for name in names(in: path) ?? [] {
                let child = relative.isEmpty ? name : relative + "/" + name
                guard let kind = kind(directory + "/" + child) else { continue }
                if kind == .directory { pending.append(child) } else { found.append(child) }
            }
        }
        return found
    }

    /// Exactly `count` bytes at `offset` of an open file into `buffer` (pread(2), EINTR
    /// retried); a file shorter than that is an EIO naming `path`.
    public static func read(_ fd: FileDescriptor, at offset: Int64, into buffer: UnsafeMutableRawPointer, count: Int, path: String) throws {
        try FileError.at(path, "read") { try fd.readAll(at: offset, into: UnsafeMutableRawBufferPointer(start: buffer, count: count)) }
    }

    /// The same, as bytes.
    public static func read(_ fd: FileDescriptor, at offset: Int64, count: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBytes { try read(fd, at: offset, into: $0.baseAddress!, count: count, path: path) }
        return bytes
    }

    /// rm -r: the file, or the directory and everything below it (links are removed, not
    /// followed). Nothing there is not an error.
    public static func remove(_ path: String) throws {
        let status: FileStatus
        do { status = try Path.status(path, followLinks: false) } catch let error as Errno {
            if error == .noEntry { return }
            throw FileError(path: path, operation: "stat", code: error)
        }
        if status.kind == .directory {
            for name in names(in: path) ?? [] { try remove(path + "/" + name) }
            do { try Path.removeDirectory(path) } catch let error as Errno {
                if error != .noEntry { throw FileError(path: path, operation: "remove", code: error) }
            }
        } else {
            try FileError.at(path, "remove") { try Path.removeIfPresent(path) }
        }
    }
}
