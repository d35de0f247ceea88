import Basics
import Files
import Layout
import Logging
import System

/// The `recordings/` directory: finished recordings (`<id>.mp4` with a `<id>.json` beside
/// it), the one being written (`<id>.mp4.part`), and what start-up and retention do to them.
public struct Recordings: Sendable {
    public enum Priority: String, Sendable, CaseIterable {
        /// Deleted after `record.keep_days`, or earlier when space runs low.
        case normal
        /// Never deleted by onair.
        case keep
    }

    /// What `/api/recordings` lists for each one.
    public struct Entry: Sendable, Equatable {
        public var id: String
        public var file: String
        public var bytes: Int64
        public var seconds: Double?
        public var frames: Int?
        public var priority: Priority
        /// When its first frame was captured (ms since the epoch): from a dated id, or
        /// from the clock once synchronised during the recording; nil when never known.
        public var startMs: Int64?
        /// Still being written.
        public var recording: Bool

        public var json: JSON {
            .fields(["id": id, "file": file, "bytes": bytes, "seconds": seconds, "frames": frames,
                     "priority": priority.rawValue, "recording": recording, "start": startMs.map(UTCDate.iso8601(milliseconds:)),
                     "export": recording ? nil : "/api/export?recording=\(id)"])
        }

        /// An entry as `json` wrote it; nil when a field is missing or of the wrong kind.
        public init?(json: JSON) {
            guard let id = json["id"]?.string, let file = json["file"]?.string, let bytes = json["bytes"]?.int64,
                  let priority = json["priority"]?.string.flatMap(Priority.init(rawValue:)),
                  let recording = json["recording"]?.bool else { return nil }
            self.init(id: id, file: file, bytes: bytes, seconds: json["seconds"]?.double, frames: json["frames"]?.int,
                      priority: priority, recording: recording, startMs: json["start"]?.string.flatMap(UTCDate.parse))
        }

        public init(id: String, file: String, bytes: Int64, seconds: Double?, frames: Int?, priority: Priority, recording: Bool,
                    startMs: Int64? = nil) {
            self.startMs = startMs ?? UTCDate.parseCompact(id)
            self.id = id
            self.file = file
            self.bytes = bytes
            self.seconds = seconds
            self.frames = frames
            self.priority = priority
            self.recording = recording
        }
    }

    public let layout: StreamLayout
    public var directory: String { layout.recordings }

    public init(root: String) { layout = StreamLayout(root: root) }

    public func partPath(_ id: String) -> String { layout.recordingPart(id) }

    /// Records what a finished recording is, next to it.
    public func describe(_ result: Finaliser.Result, id: String, priority: Priority, startMs: Int64? = nil) throws {
        let entry = Entry(id: id, file: String(StreamLayout.name(of: layout.recording(id))), bytes: result.bytes, seconds: result.seconds,
                          frames: result.videoFrames, priority: priority, recording: false, startMs: startMs)
        try AtomicFile.write(entry.json.bytes, to: layout.recordingInfo(id))
    }

    /// `GET /api/recordings`: every recording, oldest first.
    public var json: [UInt8] { JSON.fields(["recordings": list().map(\.json)]).bytes }

    /// Every recording, oldest first (ids sort by start time).
    public func list() -> [Entry] {
        let names = FileSystem.names(in: directory) ?? []
        var entries: [Entry] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let path = "\(directory)/\(name)"
            // Regular files only: a symbolic link may lead out of the data directory.
            guard let status = try? Path.status(path, followLinks: false), status.kind == .regular else { continue }
            let size = status.size
            guard let (id, finished) = StreamLayout.recordingID(name) else { continue }
            if !finished {
                entries.append(Entry(id: id, file: name, bytes: size, seconds: nil, frames: nil,
                                     priority: .normal, recording: true))
            } else {
                var entry = FileSystem.read(layout.recordingInfo(id), followLinks: false)
                    .flatMap { JSON.parse($0) }.flatMap(Entry.init(json:))
                    ?? Entry(id: id, file: name, bytes: size, seconds: nil, frames: nil, priority: .normal, recording: false)
                entry.bytes = size
                entries.append(entry)
            }
        }
        return entries
    }

    /// Finalises every `.part` an earlier run left (crash, kill -9, power cut) from its
    /// complete fragments. A `.part` that cannot be read is set aside (`.corrupt`), reported.
    public func recoverAll(priority: Priority, log: Log) {
        for entry in list() where entry.recording {
            do {
                if let result = try Finaliser.finalise(partPath: partPath(entry.id), to: layout.recording(entry.id)) {
                    try describe(result, id: entry.id, priority: priority)
                    log.emit(.recordingRecovered, level: .warn, [("id", entry.id), ("seconds", result.seconds), ("frames", result.videoFrames),
                                                ("discarded_bytes", result.discardedBytes)])
                } else {
                    log.emit(.recordingEmpty, level: .error, [("id", entry.id), ("note", "no complete fragment; removed")])
                }
            } catch let error as RecordingError {
                // Not a fragmented MP4 onair can read: set aside, so later starts go on.
                let path = partPath(entry.id)
                log.emit(.recoverySkipped, level: .error, [("path", path), ("reason", AtomicFile.setAside(path, because: "\(error)"))])
            } catch {
                // A write that failed (a full disk): the .part stays, tried again next start.
                log.emit(.recordingUnrecoverable, level: .error, [("id", entry.id), ("error", "\(error)")])
            }
        }
    }

    /// Finished, normal-priority recordings, oldest first: what space and age may remove.
    public func evictable() -> [Entry] { list().filter { !$0.recording && $0.priority == .normal } }

    /// Removes a finished recording and its description.
    public func remove(_ id: String) throws {
        try FileSystem.remove(layout.recording(id))
        try? FileSystem.remove(layout.recordingInfo(id))
    }

    /// `record.keep_days`: normal recordings whose start is older than that go. `nowMs`
    /// must come from a synchronised clock (the caller's `ClockWatch` says when); a
    /// recording whose start was never known is left to `storage.min_free`.
    public func expire(keepDays: Int, nowMs: Int64, log: Log) {
        for entry in evictable() {
            guard let started = entry.startMs, nowMs - started > Int64(keepDays) * 86_400_000 else { continue }
            do {
                try remove(entry.id)
                log.emit(.recordingExpired, level: .info, [("id", entry.id), ("keep_days", keepDays)])
            } catch {
                log.emit(.recordingExpireFailed, level: .info, [("id", entry.id), ("error", "\(error)")])
            }
        }
    }
}
