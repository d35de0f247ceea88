import Files
import HLS
import Media
import Threading

/// Stream and recording ids. Dated when the wall clock is trusted at the first frame
/// (`20261202T164233Z-3f9a`: readable, sortable, four random hex digits against a second
/// board or a restart in the same second); otherwise not a date at all, since a board
/// without a real-time clock would write one from the year its image was made:
/// `boot-<first 8 hex digits of the kernel's boot id>-<ms since boot, 10 digits>`.
/// CLOCK_MONOTONIC never goes back within a boot, so such an id is never given twice,
/// even after its stream was deleted (a destination may still hold it) and onair started
/// again within the same second, and the ids of one boot sort in the order they were made.
public final class StreamNames: @unchecked Sendable {  // `counter` under `lock`
    private let root: String
    private let boot: String
    private let lock = Lock()
    private var last: Int64 = -1

    public init(root: String, bootID: String = StreamNames.bootID()) {
        self.root = root
        boot = String(bootID.filter(\.isHexDigit).prefix(8)).lowercased()
    }

    /// The id of a stream whose first frame was captured at `firstCapture` (monotonic ns).
    public func next(dating: StreamDating, firstCapture: Int64) -> String {
        if let wall = dating.wallClockMs(monotonic: firstCapture) { return Self.datedID(wallClockMs: wall) }
        return lock.withLock {
            var ms = max(last + 1, firstCapture / 1_000_000)
            while taken("boot-\(boot)-" + Self.padded(Int(ms), 10)) { ms += 1 }
            last = ms
            return "boot-\(boot)-" + Self.padded(Int(ms), 10)
        }
    }

    private func taken(_ id: String) -> Bool {
        ["\(root)/streams/\(id)", "\(root)/recordings/\(id).mp4", "\(root)/recordings/\(id).mp4.part",
         "\(root)/recordings/\(id).json"].contains(where: FileSystem.exists)
    }

    /// A sortable, unique stream id from a trusted wall clock: `20261202T164233Z-3f9a`.
    public static func datedID(wallClockMs: Int64) -> String {
        UTCDate.compact(milliseconds: wallClockMs) + "-" + padded(Int(UInt16.random(in: 0...UInt16.max)), 4, radix: 16)
    }

    /// The kernel's id of this boot (random per boot: proc(5), /proc/sys/kernel/random/boot_id).
    public static func bootID() -> String {
        FileSystem.readText("/proc/sys/kernel/random/boot_id")
            ?? padded(Int(UInt32.random(in: 0...UInt32.max)), 8, radix: 16)
    }

    private static func padded(_ value: Int, _ width: Int, radix: Int = 10) -> String {
        let digits = String(value, radix: radix)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
