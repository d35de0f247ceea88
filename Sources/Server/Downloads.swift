import Basics
import CMicroHTTPD
import Files
import System
import Threading

extension WebServer {
    /// A file made on request from the URL's arguments: what to send and its name, or why
    /// not (a status and one line, answered as JSON).
    public struct Download: Sendable {
        public enum Answer: Sendable {
            case file(JoinedFile, name: String, contentType: String)
            case refused(UInt32, String)
        }
        public var make: @Sendable (_ argument: (String) -> String?) -> Answer
        public init(_ make: @escaping @Sendable (_ argument: (String) -> String?) -> Answer) { self.make = make }
    }

    /// A URL argument (`?stream=…`) by name, decoded by libmicrohttpd.
    func argumentReader(_ connection: OpaquePointer) -> (String) -> String? {
        let values = arguments(connection)
        return { values[$0] }
    }

    /// Every URL argument with a value (the first of a name, as MHD_lookup_connection_value
    /// reads it): a copy another thread may read once the connection has moved on.
    func arguments(_ connection: OpaquePointer) -> [String: String] {
        final class Collected { var values: [String: String] = [:] }
        let collected = Collected()
        _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { context, _, key, value in
            let collected = Unmanaged<Collected>.fromOpaque(context!).takeUnretainedValue()
            if let key, let value, collected.values[String(cString: key)] == nil { collected.values[String(cString: key)] = String(cString: value) }
            return .YES
        }, Unmanaged.passUnretained(collected).toOpaque())
        return collected.values
    }

    /// The whole file, or the one byte range asked for (RFC 9110 §14), as an attachment
    /// named after what it holds; an ETag of its size and name, so a resumed download of a
    /// live stream that has grown since can tell (If-Range, §13.1.5). At most
    /// `DownloadGate.slots` at once, made on its low-priority thread: the rest are a 503
    /// with Retry-After, so exports never starve the live path or the viewers (issue 29).
    func download(_ url: String, _ download: Download, header: (String) -> String?, arguments: [String: String]) -> Reply {
        guard let slot = downloadGate.take() else {
            return Reply(status: 503, body: .bytes(JSON.fields(["error": "\(downloadGate.slots) downloads are being made now; try again shortly"]).bytes),
                         headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store"), ("Retry-After", "2")])
        }
        switch downloadGate.make(download, arguments) {
        case .refused(let status, let message):
            return Reply(status: status, body: .bytes(JSON.fields(["error": message]).bytes),
                         headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")])
        case .file(let file, let name, let type):
            let size = file.size
            let etag = "\"\(String(UInt64(size), radix: 16))-\(String(UInt64(truncatingIfNeeded: Self.hash(name)), radix: 16))\""
            var headers = [("Content-Type", type), ("Cache-Control", "no-store"), ("ETag", etag), ("Accept-Ranges", "bytes"),
                           ("Content-Disposition", "attachment; filename=\"\(name)\"")]
            let ranged = header("If-Range").map { $0 == etag } ?? true
            switch ranged ? ByteRange.parse(header("Range"), size: size) : .none {
            case .none:
                return Reply(status: 200, body: .joined(file, offset: 0, length: size, holding: slot), headers: headers)
            case .unsatisfiable:
                headers.append(("Content-Range", "bytes */\(size)"))
                return Reply(status: 416, body: .bytes([]), headers: headers)
            case .range(let first, let last):
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
                return Reply(status: 206, body: .joined(file, offset: first, length: last - first + 1, holding: slot), headers: headers)
            }
        }
    }

    /// FNV-1a, for the ETag: which file this is, not a secret.
    static func hash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// A response that reads `length` bytes of `file` from `offset` as libmicrohttpd asks
    /// for them (64 KiB at a time): the file is never in memory. A read that fails (a
    /// segment deleted for space mid-download) ends the response with an error, so the
    /// client sees a short transfer, not wrong bytes.
    /// `holding` is released with the response, once it is sent or its client has gone.
    static func response(_ file: JoinedFile, offset: Int64, length: Int64, holding: AnyObject?) -> OpaquePointer? {
        final class Reading {
            let file: JoinedFile, offset: Int64, holding: AnyObject?
            init(_ file: JoinedFile, _ offset: Int64, _ holding: AnyObject?) { (self.file, self.offset, self.holding) = (file, offset, holding) }
        }
        let context = Unmanaged.passRetained(Reading(file, offset, holding)).toOpaque()
        return MHD_create_response_from_callback(UInt64(length), 64 * 1024, { context, position, buffer, max in
            let reading = Unmanaged<Reading>.fromOpaque(context!).takeUnretainedValue()
            guard let buffer, let count = try? reading.file.read(at: reading.offset + Int64(position), into: buffer, count: max),
                  count > 0 else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
            return count
        }, context, { context in Unmanaged<AnyObject>.fromOpaque(context!).release() })
    }
}

/// Downloads made on request (exports) are CPU work a viewer must never wait behind: at
/// most `slots` at once, each held from its request until its response is sent, and each
/// made on one thread of low priority (nice 10) while the server's thread waits for it.
final class DownloadGate: Sendable {
    let slots: Int
    private let busy = Locked(0)
    private let planner = SerialWorker(name: "onair-export")

    init(slots: Int) {
        self.slots = slots
        // Linux keeps a nice value per thread: this one, and only it, yields to the others.
        planner.async { ThisProcess.lowerThreadPriority(by: 10) }
    }

    /// Held until released (by its deinit); nil when every slot is taken.
    final class Slot {
        private let gate: DownloadGate
        fileprivate init(_ gate: DownloadGate) { self.gate = gate }
        deinit { gate.busy.withLock { $0 -= 1 } }
    }

    func take() -> Slot? {
        busy.withLock { [slots] busy -> Bool in
            guard busy < slots else { return false }
            busy += 1
            return true
        } ? Slot(self) : nil
    }

    /// `download.make` on the low-priority thread, from a copy of the request's
    /// arguments; the calling thread waits for it.
    func make(_ download: WebServer.Download, _ arguments: [String: String]) -> WebServer.Download.Answer {
        planner.sync { download.make { arguments[$0] } }
    }

    func stop() { planner.stop() }
}
