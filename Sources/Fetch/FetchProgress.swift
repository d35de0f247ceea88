import Media
import Threading

/// Progress in media time, as the source talk says a download should tell it: how much
/// of the stream is here (`12:30 of 40:00`), how fast it comes (media seconds a second),
/// and how long is left. On a terminal, one line redrawn in place; otherwise a line every
/// five seconds.
public final class FetchProgress {
    private let clock: MediaClock
    private let write: (String) -> Void
    private let terminal: Bool
    private let started: Int64
    private var lastLine: Int64?
    /// Media seconds listed in all (what is there to fetch now).
    var total = 0.0
    private var done = 0.0
    /// Media fetched by this run (not resumed), for the rate.
    private var fetchedNow = 0.0

    public init(clock: MediaClock, write: @escaping (String) -> Void, terminal: Bool) {
        self.clock = clock
        self.write = write
        self.terminal = terminal
        started = clock.now()
    }

    func advance(to done: Double, fetchedNow seconds: Double, resumed: Bool) {
        self.done = done
        if !resumed { fetchedNow += seconds }
        let now = clock.now()
        guard terminal || lastLine.map({ now - $0 >= 5_000_000_000 }) ?? true else { return }
        lastLine = now
        write(line(now))
    }

    func finish() { write(line(clock.now()) + (terminal ? "\n" : "")) }

    func line(_ now: Int64) -> String {
        let elapsed = Double(now - started) / 1e9
        let rate = elapsed > 0 ? fetchedNow / elapsed : 0
        let left = rate > 0 ? Self.clockTime(max(0, total - done) / rate) + " left" : "-"
        // Media seconds come from the playlist: a rate, a share and a time of any size
        // print without a trapping conversion.
        let tenths = intSaturating((rate * 10).rounded())
        let speed = rate > 0 ? "\(tenths / 10).\(tenths % 10)x" : "-"
        let text = "fetch: " + Self.clockTime(done) + " of " + Self.clockTime(max(total, done)) + "  " + speed + "  " + left
        guard terminal else { return text }
        let width = 30
        let filled = total > 0 ? min(width, intSaturating(Double(width) * done / total)) : 0
        return "\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] " + text
    }

    /// `m:ss`, or `h:mm:ss` from an hour.
    public static func clockTime(_ seconds: Double) -> String {
        let whole = intSaturating(seconds.rounded(.down))
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return whole >= 3600 ? "\(whole / 3600):\(two(whole / 60 % 60)):\(two(whole % 60))" : "\(whole / 60):\(two(whole % 60))"
    }
}
