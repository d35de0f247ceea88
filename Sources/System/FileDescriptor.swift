#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Synchronization

/// An open file, socket, pipe or device: the one owner of a kernel descriptor, closed
/// exactly once, by `close()` or when the last reference goes. Every call on it is a
/// system call that throws an `Errno` (EINTR retried where retrying is safe); opened with
/// O_CLOEXEC always, so no child process inherits it.
///
/// A class and not swift-system's value: two threads may hold one descriptor (a capture
/// thread polling, a stop closing it), and closing once is what keeps a reused number
/// from being closed under its new owner. The flag is an atomic, so it is `Sendable`
/// without a lock.
public final class FileDescriptor: Sendable {
    public let rawValue: Int32
    private let closed = Atomic<Bool>(false)

    /// Takes ownership of a descriptor something else opened (a C library, pipe(2)).
    public init(adopting rawValue: Int32) { self.rawValue = rawValue }

    deinit { close() }

    /// The descriptor a C call hands back through a pointer (the GPIO line requests):
    /// `call` returns 0 or an errno value, and the descriptor is owned from then on.
    public static func receiving(_ call: (UnsafeMutablePointer<Int32>) -> Int32) throws -> FileDescriptor {
        var received: Int32 = -1
        let code = call(&received)
        guard code == 0 else { throw Errno(rawValue: code) }
        return FileDescriptor(adopting: received)
    }

    /// How a file is opened for: one of these, plus `OpenOptions`.
    public enum Access: Sendable {
        case readOnly, writeOnly, readWrite
        var flags: Int32 {
            switch self {
            case .readOnly: return O_RDONLY
            case .writeOnly: return O_WRONLY
            case .readWrite: return O_RDWR
            }
        }
    }

    /// open(2)'s flags beyond the access mode.
    public struct OpenOptions: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let create = OpenOptions(rawValue: O_CREAT)
        public static let truncate = OpenOptions(rawValue: O_TRUNC)
        public static let exclusive = OpenOptions(rawValue: O_EXCL)
        public static let append = OpenOptions(rawValue: O_APPEND)
        /// The open itself does not block (a FIFO with no writer), and neither do reads.
        public static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
        /// A symbolic link in the last component is ELOOP, not followed.
        public static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
        /// Anything but a directory is ENOTDIR.
        public static let directory = OpenOptions(rawValue: O_DIRECTORY)
        /// A terminal opened does not become the controlling one.
        public static let noControllingTerminal = OpenOptions(rawValue: O_NOCTTY)
    }

    /// open(2), with O_CLOEXEC.
    public static func open(_ path: String, _ access: Access, options: OpenOptions = [],
                            permissions: mode_t = 0o644) throws -> FileDescriptor {
        let fd = try retrying { Glibc.open(path, access.flags | options.rawValue | O_CLOEXEC, permissions) }
        return FileDescriptor(adopting: fd)
    }

    /// close(2), the first time only; a later call (or the deinit) does nothing. Not
    /// retried on EINTR: on Linux the descriptor is gone whatever close returns.
    public func close() {
        if closed.exchange(true, ordering: .acquiringAndReleasing) { return }
        _ = Glibc.close(rawValue)
    }

    /// Hands the descriptor to C code that will close it (libmicrohttpd's responses from a
    /// file): this object no longer closes it.
    public func release() -> Int32 {
        closed.store(true, ordering: .releasing)
        return rawValue
    }

    /// read(2) into `buffer`: how many bytes came, 0 at the end. EAGAIN (a non-blocking
    /// descriptor with nothing to read) is thrown as `.again`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try retrying { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// pread(2): the same at `offset`, the file position untouched.
    public func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try retrying { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Exactly `buffer.count` bytes at `offset` (pread(2) until done); a file that ends
    /// first is EIO.
    public func readAll(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws {
        var done = 0
        while done < buffer.count {
            let n = try read(at: offset + Int64(done), into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if n == 0 { throw Errno.ioError }
            done += n
        }
    }

    /// write(2) once: how many bytes went.
    public func write(_ buffer: UnsafeRawBufferPointer) throws -> Int {
        try retrying { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// write(2) until all of `buffer` is written, through short writes.
    public func writeAll(_ buffer: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < buffer.count {
            done += try write(UnsafeRawBufferPointer(rebasing: buffer[done...]))
        }
    }

    public func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try writeAll($0) }
    }

    /// pwrite(2) until all of `buffer` is written at `offset`.
    public func writeAll(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < buffer.count {
            let rest = UnsafeRawBufferPointer(rebasing: buffer[done...])
            done += try retrying { pwrite(rawValue, rest.baseAddress, rest.count, off_t(offset + Int64(done))) }
        }
    }

    /// fsync(2): data and metadata on the medium.
    public func sync() throws { _ = try retrying { fsync(rawValue) } }

    /// fdatasync(2): the data, and the metadata needed to read it back.
    public func dataSync() throws { _ = try retrying { fdatasync(rawValue) } }

    /// fstat(2).
    public func status() throws -> FileStatus {
        var info = stat()
        _ = try retrying { fstat(rawValue, &info) }
        return FileStatus(info)
    }

    /// fallocate(2) with FALLOC_FL_KEEP_SIZE: blocks reserved for `length` bytes at
    /// `offset` without changing the size, so readers never see the reservation.
    /// `.notSupported` where the file system cannot.
    public func reserve(offset: Int64, length: Int64) throws {
        let code = onair_reserve(rawValue, offset, length)
        if code != 0 { throw Errno(rawValue: code) }
    }

    /// ioctl(2) with a pointer argument (retried on EINTR): the request's struct is filled
    /// in or read by the kernel. The layouts and request numbers live in CLinux.
    public func control<T>(_ request: UInt, _ argument: inout T) throws {
        let code = withUnsafeMutableBytes(of: &argument) { onair_ioctl(rawValue, request, $0.baseAddress) }
        if code != 0 { throw Errno(rawValue: code) }
    }

    /// ftruncate(2).
    public func truncate(to size: Int64) throws { _ = try retrying { ftruncate(rawValue, off_t(size)) } }

    /// lseek(2) from the start: the new position.
    @discardableResult
    public func seek(to offset: Int64) throws -> Int64 { Int64(try once { lseek(rawValue, off_t(offset), SEEK_SET) }) }

    /// How long the file or block device is: lseek(2) to its end (st_size is 0 for a
    /// block device).
    public func length() throws -> Int64 { Int64(try once { lseek(rawValue, 0, SEEK_END) }) }

    /// flock(2) LOCK_EX: waits until this process holds the file's advisory lock, which
    /// goes with the descriptor's close.
    public func lockExclusively() throws { _ = try retrying { flock(rawValue, LOCK_EX) } }

    /// Sets or clears O_NONBLOCK (fcntl(2) F_SETFL).
    public func setNonBlocking(_ on: Bool) throws {
        let flags = try once { fcntl(rawValue, F_GETFL) }
        _ = try once { fcntl(rawValue, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) }
    }

    /// A second descriptor for the same open file (dup(2) with F_DUPFD_CLOEXEC).
    public func duplicate() throws -> FileDescriptor {
        FileDescriptor(adopting: try once { fcntl(rawValue, F_DUPFD_CLOEXEC, 0) })
    }

    /// The descriptor is a terminal (isatty(3)).
    public var isTerminal: Bool { isatty(rawValue) == 1 }

    /// One line (without its end) of at most `limit` bytes, read a byte at a time so
    /// nothing after it is taken; nil at the end of input or past the limit. On a
    /// terminal with `echo` false, what is typed is not shown (termios(3) ECHO off for
    /// the read, then as it was).
    public func readLine(limit: Int, echo: Bool = true) throws -> [UInt8]? {
        var saved = termios()
        let quiet = !echo && isTerminal && tcgetattr(rawValue, &saved) == 0
        if quiet {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(rawValue, TCSAFLUSH, &silent)
        }
        defer { if quiet { _ = tcsetattr(rawValue, TCSAFLUSH, &saved) } }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = try withUnsafeMutableBytes(of: &byte) { try read(into: $0) }
            if count == 0 { return line.isEmpty ? nil : line }
            if byte == 0x0A { return line.last == 0x0D ? Array(line.dropLast()) : line }
            guard line.count < limit else { return nil }
            line.append(byte)
        }
    }

    /// The process's standard streams, never closed by onair.
    public static let standardInput = FileDescriptor(standard: 0)
    public static let standardOutput = FileDescriptor(standard: 1)
    public static let standardError = FileDescriptor(standard: 2)

    private init(standard: Int32) {
        rawValue = standard
        closed.store(true, ordering: .relaxed)
    }
}

extension FileDescriptor {
    /// A file without a name in `directory`, for reading and writing: made (mkstemp(3))
    /// and unlinked at once, so it goes when its descriptor is closed, whatever happens to
    /// the process. (Not O_TMPFILE: the data directory may be on a file system without it.)
    public static func anonymous(in directory: String) throws -> FileDescriptor {
        var template = Array((directory + "/.scratch-XXXXXX").utf8CString)
        let fd = try retrying { template.withUnsafeMutableBufferPointer { onair_mkostemp($0.baseAddress!) } }
        let descriptor = FileDescriptor(adopting: fd)
        try Path.unlink(String(cString: template))
        return descriptor
    }
}

extension FileDescriptor: Equatable, Hashable {
    /// One owner is one open file: equal only to itself.
    public static func == (lhs: FileDescriptor, rhs: FileDescriptor) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
