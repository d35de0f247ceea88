import Basics
import Files
import HLS
import Layout
import Threading

/// Stream and recording ids, each ending in the board's `device.name`, so that boards
/// publishing to one destination never make the same id. Dated when the wall clock is
/// trusted at the first frame (`20261202T164233Z-cam1`: readable, sortable); otherwise
/// not a date at all, since a board without a real-time clock would write one from the
/// year its image was made: `boot-<first 8 hex digits of the kernel's boot id>-<ms since
/// boot, 10 digits>-cam1`. CLOCK_MONOTONIC never goes back within a boot, so such an id is
/// never given twice, even after its stream was deleted (a destination may still hold it)
/// and onair started again within the same second, and the ids of one boot sort in the
/// order they were made. Where a dated id is taken already (two streams in one second, or
/// a clock stepped back) the next free second names the stream: a counter after the
/// device name could not be told from a device called `cam-2`. The stream's true start is
/// in its playlist's dates and its recording's json.
public final class StreamNames: Sendable {
    private let root: String
    private let boot: String
    private let device: String
    /// The last undated id's milliseconds, and every id given this run.
    private let given = Locked((last: Int64(-1), ids: Set<String>()))

    public init(root: String, device: String, bootID: String = StreamNames.bootID()) {
        self.root = root
        self.device = device
        boot = String(bootID.filter(\.isHexDigit).prefix(8)).lowercased()
    }

    /// The id of a stream whose first frame was captured at `firstCapture` (monotonic ns).
    public func next(dating: StreamDating, firstCapture: Int64) -> String {
        given.withLock { given in
            if var wall = dating.wallClockMs(monotonic: firstCapture) {
                while taken(Self.datedID(wallClockMs: wall, device: device), given: given.ids) { wall += 1000 }
                given.ids.insert(Self.datedID(wallClockMs: wall, device: device))
                return Self.datedID(wallClockMs: wall, device: device)
            }
            var ms = max(given.last + 1, firstCapture / 1_000_000)
            while taken(undated(ms), given: given.ids) { ms += 1 }
            given.last = ms
            return undated(ms)
        }
    }

    private func undated(_ ms: Int64) -> String { "boot-\(boot)-" + Self.padded(Int(ms), 10) + "-" + device }

    private func taken(_ id: String, given: Set<String>) -> Bool {
        given.contains(id) || StreamLayout(root: root).paths(of: id).contains(where: FileSystem.exists)
    }

    /// A sortable stream id from a trusted wall clock: `20261202T164233Z-cam1`.
    public static func datedID(wallClockMs: Int64, device: String) -> String {
        UTCDate.compact(milliseconds: wallClockMs) + "-" + device
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
