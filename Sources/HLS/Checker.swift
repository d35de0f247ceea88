import Layout
import Media
import MP4

/// One broken rule of docs/HLS_RULES.md, with where it was found.
public struct Finding: Sendable, CustomStringConvertible, Equatable {
    public enum Severity: String, Sendable { case error, warning }
    public var rule: String
    public var severity: Severity
    public var location: String
    public var message: String

    public var description: String { "\(severity) \(rule) \(location): \(message)" }

    public init(rule: String, severity: Severity, location: String, message: String) {
        self.rule = rule
        self.severity = severity
        self.location = location
        self.message = message
    }
}

/// Checks a written HLS stream (multivariant playlist → media playlist → init → segments)
/// against the rules of docs/HLS_RULES.md that apply to one muxed H.264 + AAC fMP4 variant.
/// `load` returns a file's bytes by its path relative to the stream directory.
public struct StreamChecker {
    /// nil: the file is not there; a thrown error: it is there but is not read (too large).
    public typealias Loader = (String) throws -> [UInt8]?

    var findings: [Finding] = []
    let load: Loader

    public static func check(multivariant path: String = StreamLayout.index, load: @escaping Loader) -> [Finding] {
        var checker = StreamChecker(load: load)
        checker.run(path)
        return checker.findings
    }

    init(load: @escaping Loader) { self.load = load }

    mutating func error(_ rule: String, _ location: String, _ message: String) {
        findings.append(Finding(rule: rule, severity: .error, location: location, message: message))
    }
    mutating func warning(_ rule: String, _ location: String, _ message: String) {
        findings.append(Finding(rule: rule, severity: .warning, location: location, message: message))
    }
    mutating func report(_ severity: Finding.Severity, _ rule: String, _ location: String, _ message: String) {
        findings.append(Finding(rule: rule, severity: severity, location: location, message: message))
    }

    /// Loads a file, or reports why not (L7) and returns nil.
    mutating func read(_ path: String, _ what: String) -> [UInt8]? {
        do {
            guard let bytes = try load(path) else { error("L7", path, "\(what) cannot be read"); return nil }
            return bytes
        } catch { self.error("L7", path, "\(what) is not read: \(error)"); return nil }
    }

    mutating func run(_ path: String) {
        guard let bytes = read(path, "the playlist") else { return }
        guard let top = checkText(bytes, path) else { return }
        if top.isMultivariant {
            checkMultivariant(top, path)
        } else {
            _ = checkMediaPlaylist(top, path)
        }
    }

    /// P1: UTF-8, no BOM, no control characters but CR/LF, first line #EXTM3U.
    mutating func checkText(_ bytes: [UInt8], _ path: String) -> ParsedPlaylist? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { error("P1", path, "starts with a byte-order mark") }
        if let bad = bytes.firstIndex(where: { ($0 < 0x20 && $0 != 0x0A && $0 != 0x0D) || $0 == 0x7F }) {
            error("P1", path, "control byte 0x\(String(bytes[bad], radix: 16)) at offset \(bad)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            error("P1", path, "not valid UTF-8"); return nil
        }
        let playlist = ParsedPlaylist(text: text)
        if playlist.lines.first != "#EXTM3U" { error("P1", path, "first line is not #EXTM3U") }
        for (i, line) in playlist.lines.enumerated() where line != line.trimmingSpaces {
            error("P1", "\(path):\(i + 1)", "stray whitespace")
        }
        return playlist
    }

    mutating func checkMultivariant(_ top: ParsedPlaylist, _ path: String) {
        for tag in top.tags where Self.mediaOnlyTags.contains(tag.name) {
            error("P10", "\(path):\(tag.line)", "media playlist tag \(tag.name) in a multivariant playlist")
        }
        for tag in top.danglingTags where tag.name == "EXT-X-STREAM-INF" {
            error("V1", "\(path):\(tag.line)", "EXT-X-STREAM-INF without a URI line")
        }
        if top.variants.isEmpty { error("V1", path, "no variants") }
        for stray in top.segments { error("V1", "\(path):\(stray.line)", "URI line \(Self.quote(stray.uri)) without EXT-X-STREAM-INF before it") }
        checkVersion(top, path, needs: requiredVersion(top, mediaPlaylist: false))
        for tag in top.tags(for: ["EXT-X-STREAM-INF", "EXT-X-I-FRAME-STREAM-INF", "EXT-X-MEDIA"]) {
            do { _ = try ParsedPlaylist.attributeList(tag.value ?? "") } catch {
                self.error("P2", "\(path):\(tag.line)", "\(error)")
            }
        }
        let audioGroups = checkAudioRenditions(top, path)
        var summaries: [(uri: String, media: MediaSummary)] = []
        for variant in top.variants {
            let at = "\(path):\(variant.line)"
            let a = variant.attributes
            guard let bandwidth = a["BANDWIDTH"].flatMap(HLSValue.integer) else { error("V1", at, "no decimal-integer BANDWIDTH"); continue }
            if let average = a["AVERAGE-BANDWIDTH"], HLSValue.integer(average) == nil {
                error("V2", at, "AVERAGE-BANDWIDTH \(Self.quote(average)) is not a decimal-integer")
            }
            if let rate = a["FRAME-RATE"], HLSValue.decimalFloat(rate) == nil {
                error("V2", at, "FRAME-RATE \(Self.quote(rate)) is not a decimal-floating-point number")
            }
            for name in ["CODECS", "RESOLUTION", "FRAME-RATE", "AVERAGE-BANDWIDTH"] where a[name] == nil {
                error("V2", at, "no \(name)")
            }
            guard let media = checkMediaPlaylistFile(variant.uri) else { continue }
            checkVariant(a, bandwidth: bandwidth, media: media, at: at)
            checkAudioGroup(a, bandwidth: bandwidth, media: media, groups: audioGroups, at: at)
            summaries.append((variant.uri, media))
        }
        checkAlignment(variants: summaries, audio: audioGroups)
        for stream in top.iFrameStreams { checkIFrameStream(stream, path, variants: summaries.map(\.media)) }
    }

    static let mediaOnlyTags: Set<String> = ["EXTINF", "EXT-X-TARGETDURATION", "EXT-X-MEDIA-SEQUENCE",
                                             "EXT-X-DISCONTINUITY-SEQUENCE", "EXT-X-ENDLIST", "EXT-X-PLAYLIST-TYPE",
                                             "EXT-X-MAP", "EXT-X-PROGRAM-DATE-TIME", "EXT-X-BYTERANGE", "EXT-X-DISCONTINUITY",
                                             "EXT-X-I-FRAMES-ONLY"]

    mutating func checkMediaPlaylistFile(_ uri: String) -> MediaSummary? {
        guard let bytes = read(uri, "the variant's playlist") else { return nil }
        guard let playlist = checkText(bytes, uri) else { return nil }
        if playlist.isMultivariant { error("P10", uri, "a variant URI points at a multivariant playlist"); return nil }
        return checkMediaPlaylist(playlist, uri)
    }

    /// V2, C1–C3, C6–C7: the variant's attributes against the stream it points at (an
    /// I-frame stream's bit rates are V10's).
    mutating func checkVariant(_ a: [String: String], bandwidth: Int, media: MediaSummary, at: String, rule: String? = nil) {
        let codecs = (a["CODECS"] ?? "").split(separator: ",").map { String($0).lowercased() }
        if let avc = media.videoCodec {
            if !codecs.contains(avc.lowercased()) { error("C1", at, "CODECS lacks \(avc) (from avcC)") }
        }
        if let aac = media.audioCodec, !codecs.contains(aac) { error("C3", at, "CODECS lacks \(aac) (muxed audio)") }
        for codec in codecs where codec.hasPrefix("avc1.") && (codec.count != 11 || UInt32(codec.dropFirst(5), radix: 16) == nil) {
            error("C1", at, "codec string \(codec) is not avc1.PPCCLL")
        }
        if let resolution = a["RESOLUTION"], let size = media.videoSize, resolution != "\(size.width)x\(size.height)" {
            error("V2", at, "RESOLUTION \(resolution) but the SPS says \(size.width)x\(size.height)")
        }
        if let rate = a["FRAME-RATE"], let measured = media.frameRate {
            let expected = decimalSeconds(Int64((measured * 1000).rounded()), timescale: 1000)
            if HLSValue.decimalFloat(rate).map({ abs($0 - measured) > 0.001 }) ?? false {
                error("V2", at, "FRAME-RATE \(rate) but the stream runs at \(expected)")
            }
        }
        if media.peakBitrate > bandwidth {
            error(rule ?? "C6", at, "BANDWIDTH \(bandwidth) is below the measured peak \(media.peakBitrate)")
        }
        if let average = a["AVERAGE-BANDWIDTH"].flatMap(HLSValue.integer), Double(media.averageBitrate) > Double(average) * 1.1 {
            error(rule ?? "C7", at, "measured average \(media.averageBitrate) exceeds AVERAGE-BANDWIDTH \(average) by over 10%")
        }
    }
}

extension ParsedPlaylist {
    func tags(for names: Set<String>) -> [Tag] { tags.filter { names.contains($0.name) } }
}

extension String {
    var trimmingSpaces: Substring {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
