import Codecs
import Devices
import Files
import Logging
import Media
import System
import Threading

/// `onair selftest`: on the board itself, what only its hardware can prove (issue 33):
/// each H.264 encoder onair can use encodes ten frames of the synthetic picture, and the
/// screen, if one is connected, shows the picture for a few seconds through the same
/// path as the preview. One line each — PASS, FAIL, or ABSENT (the hardware is not
/// there) — then a count; exit status 1 when anything present failed.
enum SelfTest {
    enum Outcome: String { case pass = "PASS", fail = "FAIL", absent = "ABSENT" }
    struct Check { var outcome: Outcome; var name: String; var detail: String }

    static let usage = """
    Usage: onair selftest [--seconds N]

    Checks this board's hardware as onair uses it, one line each (PASS, FAIL, or ABSENT
    when the hardware is not there):
      encoder x264, vaapi, v4l2m2m   ten 1280x720 frames of the test picture encoded to
                                     H.264, the first an IDR
      display                        the test picture on the connected screen for N
                                     seconds (default 3) through the preview's KMS path;
                                     stop onair first (systemctl stop onair): only one
                                     program can drive the screen
    Exit status 1 when a check of present hardware failed.

    """

    static func parse(_ words: [String]) throws -> Invocation {
        if words.contains("--help") || words.contains("-h") { return .help(usage) }
        return .selftest(displaySeconds: try CommandLineParser.secondsFlag(words, command: "selftest", default: 3, range: 0...60))
    }

    static func run(displaySeconds: Int) -> Int32 {
        var checks: [Check] = []
        for kind in [VideoEncoderKind.x264, .vaapi, .v4l2m2m] {
            let check = encoder(kind)
            print("selftest: \(check.outcome.rawValue) \(check.name): \(check.detail)")
            checks.append(check)
        }
        let shown = display(seconds: displaySeconds)
        print("selftest: \(shown.outcome.rawValue) \(shown.name): \(shown.detail)")
        checks.append(shown)
        let count = { (outcome: Outcome) in checks.filter { $0.outcome == outcome }.count }
        print("selftest: \(count(.pass)) passed, \(count(.fail)) failed, \(count(.absent)) absent")
        return count(.fail) > 0 ? 1 : 0
    }

    /// Ten frames of the synthetic picture through `kind`'s encoder: the first must be an
    /// IDR and every frame must come out. A hardware encoder whose device is not there is
    /// ABSENT; one whose device is there but fails is a FAIL.
    static func encoder(_ kind: VideoEncoderKind) -> Check {
        let name = "encoder \(kind.rawValue)"
        let (width, height, fps) = (1280, 720, 30)
        let started = monotonicNanoseconds()
        do {
            let encoder = try VideoEncoder(kind: kind, settings: VideoEncoderSettings(width: width, height: height, fps: fps, bitrate: 2_000_000,
                                                                                      keyframeInterval: fps))
            let pattern = SyntheticPattern(width: width, height: height, fps: fps)
            var samples: [EncodedSample] = []
            for index in 0..<10 {
                let ticks = Int64(index) * Timescale.video / Int64(fps)
                samples += try encoder.encode(pattern.frame(index: Int64(index), captureTime: ticks), ticks: ticks, keyframe: index == 0)
            }
            samples += try encoder.flush()
            let milliseconds = (monotonicNanoseconds() - started) / 1_000_000
            guard samples.count == 10, samples.first?.isSync == true else {
                return Check(outcome: .fail, name: name, detail: "\(samples.count) of 10 frames came out" + (samples.first?.isSync == true ? "" : ", the first not an IDR"))
            }
            return Check(outcome: .pass, name: name, detail: "10 frames \(width)x\(height) by \(encoder.codecName), the first an IDR, "
                         + "\(samples.reduce(0) { $0 + $1.data.count } / 1024) KiB in \(milliseconds) ms")
        } catch {
            if let missing = missingDevice(kind) { return Check(outcome: .absent, name: name, detail: missing) }
            return Check(outcome: .fail, name: name, detail: "\(error)")
        }
    }

    /// Why `kind` has no hardware here; nil when its device nodes are there.
    static func missingDevice(_ kind: VideoEncoderKind) -> String? {
        switch kind {
        case .vaapi:
            return deviceNodes(in: "/dev/dri", prefix: "renderD").isEmpty ? "no /dev/dri/renderD* (no GPU with VA-API)" : nil
        case .v4l2m2m:
            // Any /dev/video* may be the codec; libavcodec looks through them all, so a
            // refusal with nodes present is said as what libavcodec said, as ABSENT.
            return deviceNodes(in: "/dev", prefix: "video").isEmpty ? "no /dev/video* (no V4L2 memory-to-memory encoder)"
                : "no V4L2 memory-to-memory H.264 encoder among /dev/video*"
        case .x264, .auto:
            return nil
        }
    }

    /// The synthetic picture on the first connected screen, for `seconds`.
    static func display(seconds: Int) -> Check {
        let name = "display"
        guard seconds > 0 else { return Check(outcome: .absent, name: name, detail: "not tried (--seconds 0)") }
        let (width, height, fps) = (1280, 720, 30)
        let opened: DRMDisplay?
        do { opened = try DRMDisplay.open(nil, picture: (width, height), camera: nil, log: .silent()) } catch {
            return Check(outcome: .fail, name: name, detail: "\(error)")
        }
        guard let screen = opened else {
            return Check(outcome: .absent, name: name, detail: "no KMS display with a connected screen (or onair holds it: systemctl stop onair)")
        }
        let pattern = SyntheticPattern(width: width, height: height, fps: fps)
        let converter = PictureConverter()
        var shown = 0
        let frames = seconds * fps
        for index in 0..<frames {
            let frame = pattern.frame(index: Int64(index), captureTime: monotonicNanoseconds())
            if screen.show(frame: frame, buffer: nil, indicators: .init(recording: false, uplinkFailing: false), convert: {
                converter.draw($0, into: $1, pitch: $2, width: $3, height: $4)
            }) { shown += 1 }
        }
        // The screen is given back when `screen` goes (DRMDisplay's deinit).
        // A flip still pending drops a picture: most must have been shown.
        return Check(outcome: shown >= frames / 2 ? .pass : .fail, name: name, detail: "\(shown) of \(frames) test pictures shown on \(screen.path)")
    }
}
