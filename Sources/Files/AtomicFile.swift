#if canImport(Glibc)
import Glibc
#endif
import Layout

public struct FileError: Error, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var code: Int32
    /// Said instead of `strerror(code)` where onair knows better (`a FIFO, not a regular file`).
    public var detail: String?
    public var description: String { "\(operation) \(path): \(detail ?? String(cString: strerror(code)))" }
    public init(path: String, operation: String, code: Int32, detail: String? = nil) {
        self.path = path
        self.operation = operation
        self.code = code
        self.detail = detail
    }
}

/// Files other programs read are written temp → fsync → rename → fsync(dir), so a reader
/// (or a power cut) sees the old file or the new one, never half of one.
public enum AtomicFile {
    /// Moves a file that cannot be used out of the way, to `<path>.corrupt` beside it: kept
    /// for a person to look at, never deleted, and no longer read at every start.
    public static func setAside(_ path: String) throws {
        guard rename(path, StreamLayout.corrupt(path)) == 0 else { throw FileError(path: path, operation: "set aside", code: errno) }
    }

    /// Sets `path` aside and returns `reason` with what became of the file, for the log.
    public static func setAside(_ path: String, because reason: String) -> String {
        do {
            try setAside(path)
            return reason + "; " + StreamLayout.corruptNote
        } catch { return "\(reason); \(error)" }
    }

    public static func write(_ bytes: [UInt8], to path: String) throws {
        try write(to: path) { fd, temporary in try bytes.withUnsafeBytes { try writeAll(fd, $0, path: temporary) } }
    }

    /// The same for content written piece by piece: `body` writes into the temporary
    /// file (its descriptor and path are given), and the rest is as above.
    public static func write(to path: String, _ body: (Int32, String) throws -> Void) throws {
        let directory = self.directory(of: path)
        let name = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = directory + "/" + StreamLayout.temporary(name)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: temporary, operation: "create", code: errno) }
        var ok = false
        defer { if !ok { unlink(temporary) } }
        do {
            try body(fd, temporary)
            guard fsync(fd) == 0 else { throw FileError(path: temporary, operation: "fsync", code: errno) }
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw FileError(path: path, operation: "rename to", code: errno) }
        ok = true
        try syncDirectory(directory)
    }

    /// The directory a path is in ("." for a bare name).
    public static func directory(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    }

    /// write(2) until all of `raw` is written, through EINTR and short writes.
    public static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < raw.count {
            let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw FileError(path: path, operation: "write", code: errno)
            }
            offset += n
        }
    }

    /// Makes a rename durable (POSIX: the directory entry lives in the directory).
    public static func syncDirectory(_ directory: String) throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(path: directory, operation: "open", code: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw FileError(path: directory, operation: "fsync", code: errno) }
    }

    /// mkdir -p.
    public static func makeDirectories(_ path: String) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw FileError(path: current, operation: "mkdir", code: errno)
            }
        }
    }
}

extension FileError {
    /// The file system (or the user's quota) is full: something the storage keeper can mend.
    public var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }
}

/// A full card is not the end of a session (issue 13): a write that fails for want of
/// space asks the storage keeper to free some (`makeRoom` says whether it freed anything)
/// and is tried again, as long as eviction frees something.
public enum SpaceRetry {
    public typealias MakeRoom = @Sendable () -> Bool

    /// At most this many rounds of eviction for one write: each deletes a whole stream or
    /// recording, so a few are enough for any one segment.
    static let rounds = 8

    public static func run<T>(_ makeRoom: MakeRoom, _ body: () throws -> T) throws -> T {
        var round = 0
        while true {
            do { return try body() } catch let error as FileError where error.isNoSpace && round < rounds {
                round += 1
                guard makeRoom() else { throw error }
            }
        }
    }
}
