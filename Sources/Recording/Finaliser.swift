import Files
import MP4
import System

/// `.mp4.part` (fragmented, as written) → `.mp4` (progressive, `moov` first). Used at the
/// end of a recording and, at start-up, for a `.part` a crash left behind: only complete
/// fragments are carried over, so the result is always playable. The new file goes
/// temp → fsync → rename, and the `.part` is removed only once the `.mp4` is durable.
public enum Finaliser {
    public struct Result: Sendable, Equatable {
        public var path: String
        public var fragments: Int
        public var videoFrames: Int
        /// Video duration in seconds.
        public var seconds: Double
        public var bytes: Int64
        /// Bytes of an incomplete last fragment that were left out.
        public var discardedBytes: Int64
    }

    /// Returns nil (and removes the `.part`) when not one fragment was complete.
    public static func finalise(partPath: String, to finalPath: String) throws -> Result? {
        let (source, size) = try FileSystem.openRegularNamed(partPath, followLinks: false)
        let scan: FragmentedFile
        do {
            scan = try FragmentedFile.scan(size: size) { offset, count in
                var bytes = [UInt8](repeating: 0, count: count)
                do { try bytes.withUnsafeMutableBytes { try source.readAll(at: offset, into: $0) } } catch { return nil }
                return bytes
            }
        } catch {
            throw RecordingError.unreadable(partPath, "\(error)")
        }
        let directory = AtomicFile.directory(of: finalPath)
        guard scan.fragments > 0 else {
            try? Path.unlink(partPath)
            try AtomicFile.syncDirectory(directory)
            return nil
        }
        let header = ProgressiveMovie.header(tracks: scan.tracks) + ProgressiveMovie.mdatHeader(payloadSize: scan.payloadSize)
        try AtomicFile.write(to: finalPath) { target, temporary in
            try header.withUnsafeBytes { try AtomicFile.writeAll(target, $0, path: temporary) }
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            for range in scan.payloads {
                var offset = range.lowerBound
                while offset < range.upperBound {
                    let want = Int(min(Int64(buffer.count), range.upperBound - offset))
                    try buffer.withUnsafeMutableBytes { raw in
                        try FileSystem.read(source, at: offset, into: raw.baseAddress!, count: want, path: partPath)
                        try AtomicFile.writeAll(target, UnsafeRawBufferPointer(rebasing: raw[0..<want]), path: temporary)
                    }
                    offset += Int64(want)
                }
            }
        }
        // Only now that the .mp4 is durable does the .part go.
        try? Path.unlink(partPath)
        try AtomicFile.syncDirectory(directory)
        let video = scan.tracks.first { $0.handler == "vide" }
        return Result(path: finalPath, fragments: scan.fragments, videoFrames: video?.samples.count ?? 0,
                      seconds: video.map { Double($0.mediaDuration) / Double($0.timescale) } ?? 0,
                      bytes: Int64(header.count) + scan.payloadSize, discardedBytes: scan.discardedBytes)
    }
}

public enum RecordingError: Error, CustomStringConvertible {
    case unreadable(String, String)
    public var description: String {
        switch self {
        case .unreadable(let path, let why): return "\(path): not a readable fragmented MP4 (\(why))"
        }
    }
}
