import Files
import Layout
import System
import Threading

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
    private let fd: FileDescriptor
    private var size: Int64 = 0
    private var reserved: Int64 = 0
    private let reserveStep: Int64
    private let makeRoom: SpaceRetry.MakeRoom
    /// Reserving ahead failed for want of space: the file now grows as it is written.
    public private(set) var reservationOff = false
    /// Fragments left out because the disk stayed full after eviction (the recording was
    /// paused); the live stream goes on meanwhile.
    public private(set) var fragmentsDropped = 0
    /// Whether the last fragment was left out.
    public private(set) var paused = false
    /// write + fdatasync time of each fragment, ns.
    public private(set) var writeLatencies: [Int64] = []
    public private(set) var fragments = 0

    /// Creates the `.part` file and makes its init segment durable.
    public init(layout: StreamLayout, id: String, initSegment: [UInt8], preallocateBytes: Int64,
                makeRoom: @escaping SpaceRetry.MakeRoom = { false }) throws {
        self.id = id
        self.makeRoom = makeRoom
        partPath = layout.recordingPart(id)
        finalPath = layout.recording(id)
        let directory = layout.recordings
        reserveStep = preallocateBytes
        try AtomicFile.makeDirectories(directory)
        let path = partPath
        fd = try SpaceRetry.run(makeRoom) {
            let fd = try FileError.at(path, "create") { try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusive]) }
            do {
                try initSegment.withUnsafeBytes { try AtomicFile.writeAll(fd, $0, path: path) }
                try FileError.at(path, "fsync") { try fd.sync() }
                try AtomicFile.syncDirectory(directory)
            } catch {
                fd.close()
                try? Path.unlink(path)
                throw error
            }
            return fd
        }
        size = Int64(initSegment.count)
    }

    /// Appends one fragment and waits until it is on the medium. When the disk is full
    /// and eviction frees nothing, the fragment is left out (the file is cut back to the
    /// last whole fragment, so it stays readable) and the recording is paused until a
    /// later fragment fits; only other failures are thrown.
    public func append(_ fragment: [UInt8]) throws {
        let started = monotonicNanoseconds()
        do {
            try SpaceRetry.run(makeRoom) {
                do {
                    try reserveAhead(for: Int64(fragment.count))
                    try write(fragment)
                    try FileError.at(partPath, "fdatasync") { try fd.dataSync() }
                } catch {
                    // A torn fragment would hide every later one from a reader.
                    try? fd.truncate(to: size)
                    reserved = min(reserved, size)
                    throw error
                }
            }
        } catch let error as FileError where error.isNoSpace {
            fragmentsDropped += 1
            paused = true
            return
        }
        size += Int64(fragment.count)
        paused = false
        writeLatencies.append(monotonicNanoseconds() - started)
        fragments += 1
    }

    /// Closes the `.part` and finalises it into the progressive MP4.
    public func finish() throws -> Finaliser.Result? {
        fd.close()
        return try Finaliser.finalise(partPath: partPath, to: finalPath)
    }

    private func reserveAhead(for count: Int64) throws {
        guard reserveStep > 0, !reservationOff, size + count > reserved else { return }
        let target = size + count + reserveStep
        // Not every file system can reserve (tmpfs can, FAT cannot): then write without it.
        // Less room than a reservation step is no reason to stop recording: it goes on
        // growing as it is written.
        do {
            try fd.reserve(offset: reserved, length: target - reserved)
            reserved = target
        } catch let error as Errno where error == .noSpace {
            reservationOff = true
        } catch {}
    }

    /// Writes at the end of what is kept (`size`), which moves only once a whole fragment
    /// is durable.
    private func write(_ bytes: [UInt8]) throws {
        try FileError.at(partPath, "seek in") { try fd.seek(to: size) }
        try bytes.withUnsafeBytes { try AtomicFile.writeAll(fd, $0, path: partPath) }
    }
}

/// Percentiles of latencies in ns, reported in ms.
public func percentileMilliseconds(_ values: [Int64], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
    return Double(sorted[index]) / 1_000_000
}
