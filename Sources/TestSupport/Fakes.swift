import HLS
import Media
import Threading

/// A clock a test moves by hand (the NIOEmbedded idea): nothing sleeps.
public final class ManualClock: MediaClock, @unchecked Sendable {  // `time` under `lock`
    private let lock = Lock()
    private var time: Int64
    public init(now: Int64 = 1_000_000_000) { time = now }
    public func now() -> Int64 { lock.withLock { time } }
    public func advance(by nanoseconds: Int64) { lock.withLock { time += nanoseconds } }
    /// Virtual time: a sleep moves the clock to its deadline at once (never back).
    public func sleep(until deadline: Int64) { lock.withLock { time = max(time, deadline) } }
}

/// A wall clock a test steps and vouches for: `offsetMs` after the monotonic `clock`
/// (real by default), synchronised or not, as an NTP daemon would leave the kernel's.
public final class SteppedWallClock: WallClock, @unchecked Sendable {  // state under `lock`
    private let lock = Lock()
    private let clock: any MediaClock
    private var offset: Int64
    private var synced: Bool
    public init(offsetMs: Int64 = 946_684_800_000, synchronized: Bool = false, clock: any MediaClock = MonotonicClock()) {
        offset = offsetMs
        synced = synchronized
        self.clock = clock
    }
    public func read() -> ClockReading {
        let now = clock.now()
        return lock.withLock {
            ClockReading(wallMs: now / 1_000_000 + offset, monotonic: now, synchronized: synced, source: synced ? "ntp" : "none")
        }
    }
    /// Steps the clock by `ms` (forwards or back), optionally changing its trust.
    public func step(by ms: Int64, synchronized: Bool? = nil) {
        lock.withLock {
            offset += ms
            if let synchronized { synced = synchronized }
        }
    }
}

/// Hex to bytes, for golden tables: spaces and newlines are ignored.
public func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { $0.isHexDigit }
    var out: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        out.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return out
}

/// Real parameter sets from libx264 (1280x720, High@3.1), for golden tests.
public enum Golden {
    public static let sps = hex("6764001facb402802dd080000003008000001e478c1950")
    public static let pps = hex("68ef3cb0")
    /// AAC-LC, 48 kHz, mono.
    public static let audioConfig: [UInt8] = [0x11, 0x88]
}

/// Encoded samples as an encoder would give them, without an encoder: length-prefixed
/// NAL units with the right types, so sync detection and the checker work on them.
public enum FakeSamples {
    public static func video(dts: Int64, idr: Bool, size: Int = 40) -> EncodedSample {
        let nal: [UInt8] = [idr ? 0x65 : 0x41] + [UInt8](repeating: 0xAB, count: size)
        return EncodedSample(data: H264.lengthPrefixed([nal[...]]), dts: dts, pts: dts, duration: 0, isSync: idr)
    }

    public static func audio(dts: Int64, size: Int = 12) -> EncodedSample {
        EncodedSample(data: [UInt8](repeating: 0x21, count: size), dts: dts, pts: dts, duration: 1024, isSync: true)
    }
}

/// An in-memory stream directory for the checker.
public final class MemoryFiles: @unchecked Sendable {
    public var files: [String: [UInt8]] = [:]
    public init() {}
    public func load(_ path: String) -> [UInt8]? { files[path] }
    public subscript(path: String) -> String? {
        get { files[path].map { String(decoding: $0, as: UTF8.self) } }
        set { files[path] = newValue.map { Array($0.utf8) } }
    }
}

/// A clock a test moves, whose sleeps wait for it: `sleep(until:)` blocks the sleeping
/// thread until the test has advanced the time to its deadline, and `waitForSleep()` tells
/// the test when a thread has gone to sleep since the last advance. A loop that waits and
/// retries (a camera's reopening backoff) then runs step by step in virtual time, with
/// nothing waiting in real time.
public final class SteppedClock: MediaClock, Sendable {
    private struct State {
        var time: Int64
        var asleep = 0
        var sleepsBegun = 0
        var sleepsBeforeAdvance = 0
    }
    private let state: Condition<State>

    public init(now: Int64 = 1_000_000_000) { state = Condition(State(time: now)) }

    public func now() -> Int64 { state.withLock { $0.time } }

    public func sleep(until deadline: Int64) {
        state.withLock { state in
            state.asleep += 1
            state.sleepsBegun += 1
        }
        state.broadcast()
        state.withLock(waitingFor: { state -> ConditionStep<Void> in
            guard state.time >= deadline else { return .wait }
            state.asleep -= 1
            return .done(())
        })
    }

    public func advance(by nanoseconds: Int64) {
        state.withLock { state in
            state.time += nanoseconds
            state.sleepsBeforeAdvance = state.sleepsBegun
        }
        state.broadcast()
    }

    /// Waits (at most `seconds`, on the real clock) until a thread has begun a sleep since
    /// the last advance; false if none did.
    @discardableResult
    public func waitForSleep(seconds: Double = 10) -> Bool {
        let deadline = monotonicNanoseconds() + Int64(seconds * 1e9)
        return state.withLock(until: deadline, waitingFor: { $0.sleepsBegun > $0.sleepsBeforeAdvance && $0.asleep > 0 ? true : nil }) ?? false
    }
}
