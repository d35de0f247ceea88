import Files
import Layout
import MP4
import System

/// `GET /api/export?recording=<id>[&start=&end=|&last=]`: a finished recording, whole (the
/// file as it is) or a part of it, cut at the IDR at or before the start and at the end of
/// the GOP holding the end (an IDR every 2 s), the sound kept with the pictures. The
/// recording's sample tables are read through cursors (`TableCursor`), a block at a time,
/// never whole, and the part's tables spill to scratch files as the export's do: a part of
/// a two-hour recording holds no more in memory than one of two minutes.
public enum RecordingExport {
    public static func make(root: String, id: String, start: Double?, end: Double?, last: Double?) throws -> StreamExport.Result {
        guard StreamLayout.isID(id) else { throw ExportError(400, "recording=\(id.prefix(40)) is not a recording id") }
        let layout = StreamLayout(root: root)
        let path = layout.recording(id)
        guard let size = FileSystem.size(path), !FileSystem.isDirectory(path) else {
            let writing = FileSystem.exists(layout.recordingPart(id))
            throw ExportError(writing ? 409 : 404, writing ? "recording \(id) is still being written: export it once it has ended"
                                                           : "no recording \(id)")
        }
        guard let fd = try? FileSystem.openRegular(path, followLinks: false).fd else { throw ExportError(404, "no recording \(id)") }
        defer { fd.close() }
        let movie: ProgressiveFile
        do { movie = try ProgressiveFile(fd: fd, size: size) } catch { throw ExportError(500, "recording \(id): \(error)") }
        let total = movie.seconds
        if start == nil && end == nil && last == nil {
            return StreamExport.Result(file: JoinedFile([.init(.path(path), offset: 0, length: size)]), name: "\(id).mp4",
                                       start: 0, end: total, segments: 1)
        }
        let from = start ?? last.map { max(0, total - $0) } ?? 0
        let to = end ?? total
        guard from < total else { throw ExportError(400, "start \(StreamExport.label(from)) s is past the recording's end (\(StreamExport.label(total)) s)") }
        guard from <= to else { throw ExportError(400, "start (\(StreamExport.label(from)) s) is after end (\(StreamExport.label(to)) s)") }
        let cut = try movie.cut(from: from, to: to, path: path, scratch: root + "/.export")
        return StreamExport.Result(file: cut.file, name: "\(id)_\(StreamExport.label(cut.start))-\(StreamExport.label(cut.end))s.mp4",
                                   start: cut.start, end: cut.end, segments: 1)
    }
}

/// Entries of a sample table read in order, 64 KiB at a time, from the file.
struct TableCursor {
    let fd: FileDescriptor
    let start: Int64
    let count: Int
    let entrySize: Int
    private var buffer: [UInt8] = []
    private var bufferFirst = 0
    private(set) var index = 0

    init(fd: FileDescriptor, start: Int64, count: Int, entrySize: Int) {
        self.fd = fd
        self.start = start
        self.count = count
        self.entrySize = entrySize
    }

    /// The next entry's fields as big-endian 32-bit words; nil at the end.
    mutating func next() throws -> [UInt64]? {
        guard index < count else { return nil }
        if index - bufferFirst >= buffer.count / entrySize {
            let entries = min(count - index, max(1, 65_536 / entrySize))
            buffer = try FileSystem.read(fd, at: start + Int64(index * entrySize), count: entries * entrySize, path: "recording")
            bufferFirst = index
        }
        var r = ByteReader(buffer, range: ((index - bufferFirst) * entrySize)..<((index - bufferFirst + 1) * entrySize))
        index += 1
        return try (0..<(entrySize / 4)).map { _ in UInt64(try r.u32()) }
    }
}
