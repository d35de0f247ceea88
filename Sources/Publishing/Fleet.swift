import Basics
import Layout

/// `devices.json` at the destination's root: the boards publishing there, each with when
/// it was last seen, whether it is live, and where its list of streams and its page are.
/// Every board writes the whole file, so each one reads it, puts its own entry in, writes
/// it back only over the version it read (If-Match on its ETag, If-None-Match: * where there
/// is none) and reads it again: a 412, or a file without its entry (a server that ignores
/// the condition, such as nginx's WebDAV, let another board's write win), means try again
/// shortly. S3 and Apache mod_dav honour the conditions; nginx ignores them, so there the
/// read-back alone makes every board's entry arrive in the end.
public enum Fleet {
    public static let path = StreamLayout.devices

    public struct Device: Sendable, Equatable {
        /// `device.name`, which is also the board's folder.
        public var name: String
        /// When the board last wrote its entry (ISO 8601); nil while its clock is not
        /// synchronised (a board without a real-time clock would say 2000-01-01).
        public var lastSeen: String?
        /// Whether one of its streams is live at the destination.
        public var live: Bool

        public init(name: String, lastSeen: String?, live: Bool) {
            self.name = name
            self.lastSeen = lastSeen
            self.live = live
        }

        /// Paths relative to the destination's root.
        public var catalog: String { name + "/" + StreamLayout.catalog }
        public var page: String { name + "/" + StreamLayout.viewerPage }

        public var json: JSON {
            .fields(["name": name, "last_seen": lastSeen, "live": live, "streams": catalog, "page": page])
        }

        public init?(json: JSON) {
            guard let name = json["name"]?.string, let live = json["live"]?.bool else { return nil }
            self.name = name
            self.live = live
            lastSeen = json["last_seen"]?.string
        }
    }

    /// The boards a devices.json lists; nil when it is not such a file.
    public static func parse(_ bytes: [UInt8]) -> [Device]? {
        guard case .object(let root)? = JSON.parse(bytes), case .array(let items)? = root["devices"] else { return nil }
        let devices = items.compactMap(Device.init(json:))
        return devices.count == items.count ? devices : nil
    }

    /// The file: `{"devices": [...], "revision": ...}`, sorted by name. The revision is new
    /// at every write, so no two writes are the same bytes: S3's ETag is the MD5 of the
    /// bytes, and a file that came back to an earlier content (a board live, off air, live
    /// again, with no clock to date it) would match an If-Match read long before, letting a
    /// stale write through.
    public static func json(_ devices: [Device], revision: UInt64 = .random(in: 0...UInt64.max)) -> [UInt8] {
        let digits = String(revision, radix: 16)
        return JSON.fields(["devices": JSON.array(devices.sorted { $0.name < $1.name }.map(\.json)),
                            "revision": String(repeating: "0", count: 16 - digits.count) + digits]).bytes
    }

    /// What one attempt to put `mine` into the shared file came to.
    public enum Outcome: Equatable {
        /// The file, read back, holds the entry as written.
        case listed
        /// Another board wrote first (412), or its write replaced this one: try again.
        case conflict(String)
    }

    /// One read, merge, conditional write and read-back; transport failures throw.
    /// `unreadable` hears of a devices.json that is not one (it is replaced).
    public static func register(_ mine: Device, with transport: Transport, unreadable: (String) -> Void = { _ in }) throws -> Outcome {
        let current = try transport.get(path)
        var devices: [Device] = []
        if let current {
            if let parsed = parse(current.body) { devices = parsed } else { unreadable("\(path) is not a list of devices; replaced") }
        }
        devices.removeAll { $0.name == mine.name }
        devices.append(mine)
        // No ETag from the server: nothing to condition the write on.
        let condition: WriteCondition? = current == nil ? .ifNoneExists : current?.etag.map(WriteCondition.ifMatch)
        let (type, cache) = ("application/json", "no-cache")
        do { try transport.put(path, body: json(devices), contentType: type, cacheControl: cache, condition: condition) } catch let error as UploadError
            where error.status == 412 {
            return .conflict("changed since it was read (412)")
        }
        guard let back = try transport.get(path), let listed = parse(back.body), listed.contains(mine) else {
            return .conflict("read back without this board: another board's write replaced it")
        }
        return .listed
    }
}
