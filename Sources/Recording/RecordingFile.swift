import CLinux
import Publishing
#if canImport(Glibc)
import Glibc
#endif

/// The local recording while it is written: `recordings/<id>.mp4.part`, a fragmented MP4
/// (init segment, then one `moof`+`mdat` per second) made durable fragment by fragment,
/// so a power cut loses at most the fragment being written. `finish` turns it into
/// `recordings/<id>.mp4`, a progressive MP4 with `moov` first.
///
/// Space is reserved ahead of the writer (`fallocate`, keeping the file size), so the file
/// system finds blocks before they are needed and write latency stays steady (the talk's
/// deterministic writing).
public final class RecordingFile {
    public let id: String
    public let partPath: String
    public let finalPath: String
    private var fd: Int32
    private var size: Int64 = 0
    private var reserved: Int64 = 0
    private let reserveStep: Int64
    /// write + fdatasync time of each fragment, ns.
    public private(set) var writeLatencies: [Int64] = []
    public private(set) var fragments = 0

    /// Creates the `.part` file and makes its init segment durable.
    public init(directory: String, id: String, initSegment: [UInt8], preallocateBytes: Int64) throws {
        self.id = id
        partPath = "\(directory)/\(id).mp4.part"
        finalPath = "\(directory)/\(id).mp4"
        reserveStep = preallocateBytes
        try AtomicFile.makeDirectories(directory)
        fd = open(partPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: partPath, operation: "create", code: errno) }
        do {
            try write(initSegment)
            guard fsync(fd) == 0 else { throw FileError(path: partPath, operation: "fsync", code: errno) }
            try AtomicFile.syncDirectory(directory)
        } catch {
            close(fd)
            unlink(partPath)
            throw error
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Appends one fragment and waits until it is on the medium.
    public func append(_ fragment: [UInt8]) throws {
        let started = monotonicNanoseconds()
        try reserveAhead(for: Int64(fragment.count))
        try write(fragment)
        guard fdatasync(fd) == 0 else { throw FileError(path: partPath, operation: "fdatasync", code: errno) }
        writeLatencies.append(monotonicNanoseconds() - started)
        fragments += 1
    }

    /// Closes the `.part` and finalises it into the progressive MP4.
    public func finish() throws -> Finaliser.Result? {
        close(fd)
        fd = -1
        return try Finaliser.finalise(partPath: partPath, to: finalPath)
    }

    private func reserveAhead(for count: Int64) throws {
        guard reserveStep > 0, size + count > reserved else { return }
        let target = size + count + reserveStep
        // Not every file system can reserve (tmpfs can, FAT cannot): then write without it.
        let result = onair_reserve(fd, reserved, target - reserved)
        if result == 0 { reserved = target } else if result == ENOSPC {
            throw FileError(path: partPath, operation: "reserve space for", code: result)
        }
    }

    private func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try AtomicFile.writeAll(fd, $0, path: partPath) }
        size += Int64(bytes.count)
    }
}

/// Percentiles of latencies in ns, reported in ms.
public func percentileMilliseconds(_ values: [Int64], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
    return Double(sorted[index]) / 1_000_000
}
