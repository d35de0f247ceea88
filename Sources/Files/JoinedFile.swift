import System

/// A file nobody stores: pieces of other files, one after another, read as one (an
/// export's header from a scratch file, then the media bytes of each stored segment).
/// Files are opened when a read reaches them, one at a time, so a two-hour export of
/// 3,600 segments holds one descriptor; a scratch file is held open (it has no name).
public final class JoinedFile: @unchecked Sendable {  // `open` is used by one reader at a time (a response)
    public enum Source: Sendable {
        /// A named file, opened when read.
        case path(String)
        /// An open file without a name (a scratch file).
        case descriptor(FileDescriptor)
    }

    public struct Piece: Sendable {
        public var source: Source
        public var offset: Int64
        public var length: Int64
        public init(_ source: Source, offset: Int64, length: Int64) {
            self.source = source
            self.offset = offset
            self.length = length
        }
    }

    public let pieces: [Piece]
    public let size: Int64
    /// Where each piece starts in the joined file.
    private let starts: [Int64]
    private var open: (path: String, fd: FileDescriptor)?

    public init(_ pieces: [Piece]) {
        self.pieces = pieces
        var starts: [Int64] = []
        var total: Int64 = 0
        for piece in pieces {
            starts.append(total)
            total += piece.length
        }
        self.starts = starts
        size = total
    }

    /// Up to `count` bytes at `offset` into `buffer`; how many (0 at the end). Throws when
    /// a piece cannot be read in full (deleted, or shorter than it was).
    public func read(at offset: Int64, into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        guard offset < size, count > 0 else { return 0 }
        // The piece holding `offset`: the last start at or before it.
        var low = 0, high = starts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        let piece = pieces[low]
        let within = offset - starts[low]
        let want = Int(min(Int64(count), piece.length - within))
        try FileSystem.read(try descriptor(piece.source), at: piece.offset + within, into: buffer, count: want, path: name(piece.source))
        return want
    }

    /// Every byte, for tests and small files.
    public func readAll() throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var offset: Int64 = 0
        while offset < size {
            let n = try bytes.withUnsafeMutableBytes { try read(at: offset, into: $0.baseAddress! + Int(offset), count: $0.count - Int(offset)) }
            offset += Int64(n)
        }
        return bytes
    }

    private func descriptor(_ source: Source) throws -> FileDescriptor {
        switch source {
        case .descriptor(let fd): return fd
        case .path(let path):
            if let open, open.path == path { return open.fd }
            if let open { open.fd.close() }
            self.open = nil
            let fd = try FileSystem.openRegularNamed(path, followLinks: false).fd
            self.open = (path, fd)
            return fd
        }
    }

    private func name(_ source: Source) -> String {
        if case .path(let path) = source { return path }
        return "(scratch file)"
    }
}

/// A file without a name in `directory` (made and unlinked at once), written through a
/// buffer: what does not fit in memory while an export is planned. It goes when its
/// descriptor is closed, whatever happens to the process.
public final class ScratchFile {
    public let fd: FileDescriptor
    public private(set) var length: Int64 = 0
    private var buffer: [UInt8] = []

    public init(in directory: String) throws {
        try AtomicFile.makeDirectories(directory)
        fd = try FileError.at(directory, "create a scratch file in") { try FileDescriptor.anonymous(in: directory) }
        buffer.reserveCapacity(1 << 16)
    }

    /// The first write that failed (a full disk): `append` keeps going without writing,
    /// and whoever finishes the file asks.
    public private(set) var failure: Error?

    public func write(_ bytes: [UInt8]) throws {
        buffer += bytes
        length += Int64(bytes.count)
        if buffer.count >= 1 << 16 { try flush() }
    }

    /// `write` for callers that cannot throw; the error waits in `failure`.
    public func append(_ bytes: [UInt8]) {
        guard failure == nil else { return }
        do { try write(bytes) } catch { failure = error }
    }

    public func flush() throws {
        if let failure { throw failure }
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { try AtomicFile.writeAll(fd, $0, path: "(scratch file)") }
        buffer.removeAll(keepingCapacity: true)
    }

    /// `count` bytes at `offset` (after `flush`).
    public func read(at offset: Int64, count: Int) throws -> [UInt8] {
        try FileSystem.read(fd, at: offset, count: count, path: "(scratch file)")
    }

    /// The descriptor, flushed, for a `JoinedFile` to read.
    public func handOver() throws -> JoinedFile.Source {
        try flush()
        return .descriptor(fd)
    }
}
