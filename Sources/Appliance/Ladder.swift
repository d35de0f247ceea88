import Basics
import Devices
import Streaming

/// `video.ladder`: the live stream as rungs of one capture, so a viewer on a weak link
/// drops to a smaller picture instead of stalling (issue 20).
public enum LadderSetting: Sendable, Equatable {
    /// One variant, sound and pictures muxed.
    case off
    /// The configured picture as the top rung, plus the next lower preset.
    case auto
    /// Rungs as written (pictures before rotation), the highest bit rate first.
    case rungs([Rung])

    /// `off`, `auto`, or rungs `WxH@RATE` separated by commas (`1280x720@2.5M,854x480@900k`).
    static func parse(_ text: String) throws -> LadderSetting {
        if text == "off" { return .off }
        if text == "auto" { return .auto }
        var rungs: [Rung] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let token = String(item).trimmingWhitespace()
            let parts = token.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
            let size = parts[0].split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, size.count == 2 else {
                throw ConfigError.expected("off, auto or rungs like 1280x720@2.5M,854x480@900k", got: quoted(token))
            }
            let width = try ConfigFile.evenInteger(String(size[0]), 16...7680)
            let height = try ConfigFile.evenInteger(String(size[1]), 16...4320)
            let rung = Rung(width: width, height: height, bitrate: try ConfigFile.bitrate(String(parts[1])))
            if rungs.contains(rung) { throw ConfigError.invalid("rung \(rung) is listed twice") }
            rungs.append(rung)
        }
        guard rungs.count <= maximumRungs else { throw ConfigError.invalid("\(rungs.count) rungs; at most \(maximumRungs)") }
        return .rungs(rungs.sorted { ($0.bitrate, $0.width * $0.height) > ($1.bitrate, $1.width * $1.height) })
    }

    static let maximumRungs = 6

    /// The presets a lower rung comes from, landscape, largest first: the source talk's
    /// three, then the two lowest of Apple's HLS authoring ladder.
    static let presets = [Rung(width: 1280, height: 720, bitrate: 2_500_000), Rung(width: 1280, height: 720, bitrate: 1_500_000),
                          Rung(width: 854, height: 480, bitrate: 900_000), Rung(width: 640, height: 360, bitrate: 400_000),
                          Rung(width: 416, height: 234, bitrate: 145_000)]

    /// The rung `auto` adds below `top`: the first preset with a smaller picture and a
    /// lower bit rate, at the preset's height in the top's shape (a 4:3 camera keeps 4:3).
    static func nextLower(below top: Rung) -> Rung? {
        guard let preset = presets.first(where: { $0.width * $0.height < top.width * top.height && $0.bitrate < top.bitrate }) else {
            return nil
        }
        let landscape = top.width >= top.height
        let short = landscape ? preset.height : preset.width
        let long = (short * max(top.width, top.height) / min(top.width, top.height) + 1) / 2 * 2
        return Rung(width: landscape ? long : short, height: landscape ? short : long, bitrate: preset.bitrate)
    }
}

extension Settings {
    /// The ladder's rungs below the top, pictures before rotation.
    public var lowerRungs: [Rung] {
        switch ladder {
        case .off: return []
        case .auto: return LadderSetting.nextLower(below: Rung(width: liveSize.width, height: liveSize.height, bitrate: videoBitrate)).map { [$0] } ?? []
        case .rungs(let rungs): return Array(rungs.dropFirst())
        }
    }

    /// A rung larger than the capture (the camera's picture, or what is asked of the
    /// synthetic one: the top rung's, or the recording's): scaling up makes no detail,
    /// only bits. Said for `video.ladder`.
    public var ladderProblem: String? {
        guard case .rungs(let rungs) = ladder else { return nil }
        guard let big = rungs.first(where: { $0.width > captureWidth || $0.height > captureHeight }) else { return nil }
        return "video.ladder: rung \(big) is larger than the capture, \(captureWidth)x\(captureHeight)"
            + (cameraSize == nil ? " (the top rung's picture)" : " (what the camera gives)")
    }
}
