import Basics
import Codecs
import Devices
import Files
import Logging
import System

/// `performance.*`: what the board's encoders can sustain, and what to do when a
/// session would ask for more (the talk's sustained-performance rule: decide before
/// starting, not by dropping frames later).
public struct PerformanceSettings: Sendable, Equatable {
    public enum Overload: String, Sendable, CaseIterable {
        /// Recording first down to the live size, then the live frame rate.
        case lower
        /// Do not start; say which output to lower.
        case refuse
    }
    public var overload: Overload = .lower
    /// Pixels per second each encoder kind sustains; x264's is measured on this CPU when
    /// not set. The board profile's table.
    public var capacity: [VideoEncoderKind: Double] = [:]

    public init() {}

    /// Hardware encoders' published limits: VA-API on an Intel GPU does several 1080p60
    /// streams; the Raspberry Pi 4's V4L2 M2M H.264 encoder one 1080p30.
    static let hardwareDefaults: [VideoEncoderKind: Double] = [.vaapi: 2 * 1920 * 1080 * 60, .v4l2m2m: 1920 * 1080 * 30]
}

/// The cost of a session before it starts: each output's pixels per second over the
/// capacity of the encoder kind it runs on; outputs on the same kind share it.
public struct EncodingCost: Sendable, Equatable {
    public struct Output: Sendable, Equatable {
        public var name: String
        public var kind: VideoEncoderKind
        public var width: Int
        public var height: Int
        public var fps: Int
        /// Its rung of the live quality ladder (0: the top, or an output without one).
        public var rung = 0
        public var pixelsPerSecond: Double { Double(width * height * fps) }
        public var description: String { "\(name) \(width)x\(height)@\(fps) on \(kind.rawValue)" }
    }

    public var outputs: [Output]
    public var capacity: [VideoEncoderKind: Double]

    /// The busiest encoder's load: 1.0 is all it can sustain.
    public var value: Double {
        Dictionary(grouping: outputs, by: \.kind).map { kind, outputs in
            outputs.reduce(0) { $0 + $1.pixelsPerSecond } / (capacity[kind] ?? .infinity)
        }.max() ?? 0
    }

    /// The talk's order of sacrifice: the recording down to the live size first, then the
    /// quality ladder's top rung (while more than one is left), then the live frame rate
    /// (in steps, not below 10 fps, every rung alike). Returns the outputs as lowered,
    /// what was changed, and how many top rungs went; nil when even that does not fit.
    public func lowered() -> (outputs: [Output], changes: [String], droppedRungs: Int)? {
        var outputs = self.outputs
        var changes: [String] = []
        var dropped = 0
        func cost() -> Double { EncodingCost(outputs: outputs, capacity: capacity).value }
        func live() -> [Int] { outputs.indices.filter { outputs[$0].name == "live" || outputs[$0].rung > 0 } }
        if cost() <= 1, changes.isEmpty { return (outputs, [], 0) }
        if let r = outputs.firstIndex(where: { $0.name == "recording" }), let top = live().first,
           outputs[r].width * outputs[r].height > outputs[top].width * outputs[top].height {
            outputs[r].width = outputs[top].width
            outputs[r].height = outputs[top].height
            changes.append("recording to \(outputs[r].width)x\(outputs[r].height)")
            if cost() <= 1 { return (outputs, changes, 0) }
        }
        while live().count > 1, let top = live().first {
            changes.append("live without its top rung \(outputs[top].width)x\(outputs[top].height)")
            outputs.remove(at: top)
            dropped += 1
            if let next = live().first { outputs[next].name = "live" }
            if cost() <= 1 { return (outputs, changes, dropped) }
        }
        if let top = live().first {
            for fps in [25, 24, 20, 15, 12, 10] where fps < outputs[top].fps {
                for l in live() { outputs[l].fps = fps }
                if cost() <= 1 { return (outputs, changes + ["live to \(fps) fps"], dropped) }
            }
        }
        return nil
    }
}

/// x264's sustained pixel rate on this CPU: a short 720p encode of the synthetic pattern
/// with the live settings, timed in process CPU seconds and scaled to every core, with a
/// fifth kept back for capture, audio, packaging and the network. Measured once per CPU
/// model and core count, and kept where it outlives the data directory: it describes the
/// machine (`$XDG_CACHE_HOME/onair`, else `~/.cache/onair`, else the data directory).
public enum X264Calibration {
    static func cacheFile(dataDirectory: String) -> String {
        let environment = Environment.variables
        let base = environment["XDG_CACHE_HOME"].map { $0 + "/onair" } ?? environment["HOME"].map { $0 + "/.cache/onair" }
        if let base, (try? AtomicFile.makeDirectories(base)) != nil {
            return base + "/x264-capacity"
        }
        return dataDirectory + "/.x264-capacity"
    }

    public static func capacity(dataDirectory: String, log: Log) -> Double {
        let cores = max(1, ThisProcess.processorCount)
        let model = FileSystem.readText("/proc/cpuinfo")?
            .split(separator: "\n").first { $0.hasPrefix("model name") || $0.hasPrefix("Model") }
            .map { String($0.split(separator: ":", maxSplits: 1).last ?? "").trimmingWhitespace() } ?? "unknown"
        let key = "\(model)|\(cores)"
        let cache = cacheFile(dataDirectory: dataDirectory)
        if let text = FileSystem.readText(cache) {
            let parts = text.split(separator: "\n")
            if parts.count == 2, parts[0] == key, let value = Double(parts[1]) { return value }
        }
        let width = 1280, height = 720, frames = 60
        let pattern = SyntheticPattern(width: width, height: height, fps: 30)
        let pictures = (0..<frames).map { pattern.frame(index: Int64($0), captureTime: 0) }
        let seconds: Double
        do {
            let encoder = try VideoEncoder(kind: .x264, settings: VideoEncoderSettings(width: width, height: height, fps: 30,
                                                                                      bitrate: 1_500_000, keyframeInterval: 60))
            // Warm up (threads, first IDR) before the clock starts.
            for n in 0..<5 { _ = try encoder.encode(pictures[n], ticks: Int64(n) * 3000, keyframe: n == 0) }
            let started = processCPUSeconds()
            for n in 5..<frames { _ = try encoder.encode(pictures[n], ticks: Int64(n) * 3000, keyframe: false) }
            _ = try encoder.flush()
            seconds = max(processCPUSeconds() - started, 0.001)
        } catch {
            return Double(1280 * 720 * 30)  // a guess rather than no answer
        }
        // CPU seconds, not wall time: one encoder's threads do not fill every core, but
        // the live and recording encoders together do.
        let capacity = Double(width * height * (frames - 5)) / seconds * Double(cores) * 0.8
        try? AtomicFile.write(Array("\(key)\n\(capacity)\n".utf8), to: cache)
        log(.performanceCalibrated, ("encoder", "x264"), ("cpu", model), ("cores", cores),
            ("pixels_per_second", Int(capacity)), ("cache", cache))
        return capacity
    }
}

/// User + system CPU time of the whole process so far.
func processCPUSeconds() -> Double { ThisProcess.cpuSeconds }
