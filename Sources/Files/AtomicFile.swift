import Layout
import System

/// A system call on a file failed: which call, on which path, and the kernel's reason.
public struct FileError: Error, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var code: Errno
    /// Said instead of strerror(3)'s text where onair knows better (`a FIFO, not a regular file`).
    public var detail: String?
    public var description: String { "\(operation) \(path): \(detail ?? code.description)" }
    public init(path: String, operation: String, code: Errno, detail: String? = nil) {
        self.path = path
        self.operation = operation
        self.code = code
        self.detail = detail
    }

    /// Runs system calls on `path`, an `Errno` thrown by them becoming a `FileError` that
    /// names the path and the operation.
    public static func at<T>(_ path: String, _ operation: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as Errno { throw FileError(path: path, operation: operation, code: error) }
    }
}

/// Files other programs read are written temp → fsync → rename → fsync(dir), so a reader
/// (or a power cut) sees the old file or the new one, never half of one.
public enum AtomicFile {
    /// Moves a file that cannot be used out of the way, to `<path>.corrupt` beside it: kept
    /// for a person to look at, never deleted, and no longer read at every start.
    public static func setAside(_ path: String) throws {
        try FileError.at(path, "set aside") { try Path.rename(path, to: StreamLayout.corrupt(path)) }
    }

    /// Sets `path` aside and returns `reason` with what became of the file, for the log.
    public static func setAside(_ path: String, because reason: String) -> String {
        do {
            try setAside(path)
            return reason + "; " + StreamLayout.corruptNote
        } catch { return "\(reason); \(error)" }
    }

    /// `permissions`: the new file's mode (0o600 for a private key), before the umask.
    public static func write(_ bytes: [UInt8], to path: String, permissions: UInt32 = 0o644) throws {
        try write(to: path, permissions: permissions) { fd, temporary in try bytes.withUnsafeBytes { try writeAll(fd, $0, path: temporary) } }
    }

    /// The same for content written piece by piece: `body` writes into the temporary
    /// file (its descriptor and path are given), and the rest is as above.
    public static func write(to path: String, permissions: UInt32 = 0o644, _ body: (FileDescriptor, String) throws -> Void) throws {
        let pending = try Pending(path, permissions: permissions)
        try body(pending.fd, pending.temporary)
        try pending.commit()
    }

    /// A file being written whose pieces come over time (an upload, between a server's
    /// callbacks): in a temporary file beside `path` until `commit` puts it there whole;
    /// dropped without a commit, it leaves nothing behind.
    public final class Pending {
        public let path: String
        public let temporary: String
        public let fd: FileDescriptor
        private var done = false

        public init(_ path: String, permissions: UInt32 = 0o644) throws {
            self.path = path
            let name = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
            temporary = AtomicFile.directory(of: path) + "/" + StreamLayout.temporary(name)
            let temporary = self.temporary
            fd = try FileError.at(temporary, "create") { try FileDescriptor.open(temporary, .writeOnly, options: [.create, .truncate], permissions: permissions) }
        }

        public func write(_ raw: UnsafeRawBufferPointer) throws { try AtomicFile.writeAll(fd, raw, path: temporary) }

        /// Synced, renamed over `path`, the directory synced: there whole, or (thrown) not at all.
        public func commit() throws {
            precondition(!done, "a pending file is committed once")
            done = true
            var ok = false
            defer { if !ok { try? Path.unlink(temporary) } }
            do { try FileError.at(temporary, "fsync") { try fd.sync() } } catch { fd.close(); throw error }
            fd.close()
            try FileError.at(path, "rename to") { try Path.rename(temporary, to: path) }
            ok = true
            try AtomicFile.syncDirectory(AtomicFile.directory(of: path))
        }

        deinit {
            guard !done else { return }
            fd.close()
            try? Path.unlink(temporary)
        }
    }

    /// The directory a path is in ("." for a bare name).
    public static func directory(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    }

    /// write(2) until all of `raw` is written, through EINTR and short writes.
    public static func writeAll(_ fd: FileDescriptor, _ raw: UnsafeRawBufferPointer, path: String) throws {
        try FileError.at(path, "write") { try fd.writeAll(raw) }
    }

    /// Makes a rename durable (POSIX: the directory entry lives in the directory).
    public static func syncDirectory(_ directory: String) throws {
        let fd = try FileError.at(directory, "open") { try FileDescriptor.open(directory, .readOnly, options: .directory) }
        try FileError.at(directory, "fsync") { try fd.sync() }
    }

    /// mkdir -p.
    public static func makeDirectories(_ path: String) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            do { try Path.makeDirectory(current) } catch let error as Errno {
                if error != .exists { throw FileError(path: current, operation: "mkdir", code: error) }
            }
        }
    }
}

extension FileError {
    /// The file system (or the user's quota) is full: something the storage keeper can mend.
    public var isNoSpace: Bool { code.isNoSpace }
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
