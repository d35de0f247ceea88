import RTMP

/// One `[destination.NAME]` of onair.conf: where the live stream goes besides the origin
/// and the viewers (a platform's ingest, any RTMP server), with the stream key. A platform
/// preset (`preset = youtube`) knows its ingest URL and its limits; the user gives the key.
public struct DestinationSettings: Sendable, Equatable {
    /// The section's name (`[destination.youtube]` → `youtube`): what the console, the
    /// status page and the metrics call it.
    public var name: String
    /// `rtmp://host[:port]/app`, `rtmps://…` or `srt://host:port[?streamid=…]`; nil: the
    /// preset's.
    public var url: String?
    /// The stream key: for RTMP the stream name after the app, as platforms write it; for
    /// SRT the stream id. A secret: never printed, logged or shown back.
    public var key = ""
    /// SRT's passphrase (AES; 10 to 79 characters), a secret.
    public var passphrase: String?
    /// SRT's latency: how long the receiver waits for a lost packet to come again.
    public var latencyMs: Int?
    public var enabled = true
    public var preset: Platform?
    /// The rung of the quality ladder (`video.ladder`) it sends, 0 the top (onair.conf
    /// counts from 1): a platform that takes less than the top rung's bit rate gets a
    /// smaller picture from the same encoders, with no encoder of its own.
    public var rung = 0

    public init(name: String) { self.name = name }

    /// A name onair takes for a destination: 1 to 32 lower-case letters, digits, '-' or
    /// '_', so it is a config section, a metric label and a log value as it is.
    public static func validName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count) && name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }

    /// What is wrong with `text` as a destination's URL, in words; nil when it is one.
    public static func urlProblem(_ text: String) -> String? {
        guard ["rtmp://", "rtmps://", "srt://"].contains(where: text.lowercased().hasPrefix) else {
            return "not an rtmp://, rtmps:// or srt:// URL"
        }
        do {
            if SRTURL.names(text) { _ = try SRTURL(text) } else { _ = try RTMPURL(text) }
        } catch { return "\(error)" }
        return nil
    }

    /// Whether the destination is an SRT one (its URL is srt://).
    public var isSRT: Bool { url.map(SRTURL.names) ?? false }

    /// An SRT destination's call, checked: the URL's host and port, and its stream id,
    /// passphrase and latency, each replaced by its own setting when set.
    public func srtTarget() throws(DestinationSettingsError) -> SRTURL {
        guard let text = url else { throw .problem(name, "no url") }
        var target: SRTURL
        do { target = try SRTURL(text) } catch { throw .problem(name, "url: \(error)") }
        if !key.isEmpty { target.streamID = key }
        if let passphrase { target.passphrase = passphrase }
        if let latencyMs { target.latencyMs = latencyMs }
        if let passphrase = target.passphrase, !(10...79).contains(passphrase.utf8.count) {
            throw .problem(name, "an SRT passphrase has 10 to 79 characters (not shown)")
        }
        if let id = target.streamID, id.utf8.count > 512 { throw .problem(name, "an SRT stream id has at most 512 bytes (not shown)") }
        return target
    }

    /// Where to connect and the key to publish with, checked: the URL (its own, or the
    /// preset's), and a key. Without a key, the URL's last path element is the key, as a
    /// whole URL is written for a server of one's own (`rtmp://host/live/stream`).
    public func target() throws(DestinationSettingsError) -> (url: RTMPURL, key: String) {
        guard let text = url ?? preset?.ingest else { throw .problem(name, "no url (set url, or a preset such as youtube)") }
        var url: RTMPURL
        do { url = try RTMPURL(text) } catch { throw .problem(name, "url: \(error)") }
        var key = self.key
        if !key.isEmpty, url.app.hasSuffix("/" + key) {
            // The whole URL pasted beside the key: the app is what comes before it.
            url.app = String(url.app.dropLast(key.count + 1))
        }
        if key.isEmpty {
            guard let slash = url.app.lastIndex(of: "/") else {
                throw .problem(name, "no key (set key to the stream key the platform gives, or end the url with the stream name)")
            }
            key = String(url.app[url.app.index(after: slash)...])
            url.app = String(url.app[..<slash])
        }
        guard key.utf8.count <= 512, key.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .problem(name, "the key is not printable ASCII of at most 512 characters (not shown)")
        }
        return (url, key)
    }
}

/// A destination's settings that cannot work: the destination's name and what is wrong
/// (never the key).
public enum DestinationSettingsError: Error, CustomStringConvertible, Equatable {
    case problem(String, String)
    public var description: String {
        switch self { case .problem(let name, let what): return "destination.\(name): \(what)" }
    }
}

/// A platform people stream to: its ingest and what it asks of a stream (from its own
/// documentation, checked December 2026). onair says at the start which limits its
/// stream does not meet; it still sends it (the platform decides), but the user knows why
/// a platform complains.
public struct Platform: Sendable, Equatable {
    public var name: String
    /// The ingest URL (RTMPS where the platform offers it).
    public var ingest: String
    /// The longest keyframe interval the platform takes, in seconds.
    public var keyframeSeconds: Double
    /// The highest video bit rate it takes, bits per second.
    public var videoBitrate: Int
    /// The highest AAC bit rate it takes.
    public var audioBitrate: Int
    /// The AAC sampling rates it takes.
    public var sampleRates: [Int]

    /// YouTube Live: "Choose live encoder settings, bitrates, and resolutions" (keyframe
    /// frequency 2 s, 4 s at most; AAC 128 kbps stereo at 44.1 or 48 kHz; 1080p30 up to
    /// 10 Mbps). The primary RTMPS ingest.
    public static let youtube = Platform(name: "youtube", ingest: "rtmps://a.rtmps.youtube.com:443/live2", keyframeSeconds: 4,
                                         videoBitrate: 51_000_000, audioBitrate: 128_000, sampleRates: [44_100, 48_000])
    /// Twitch: "Broadcasting Guidelines" (CBR, keyframe interval 2 s, AAC up to 160 kbps,
    /// 6 Mbps for most); the global ingest, which routes to the nearest.
    public static let twitch = Platform(name: "twitch", ingest: "rtmps://ingest.global-contribute.live-video.net:443/app", keyframeSeconds: 2,
                                        videoBitrate: 6_000_000, audioBitrate: 160_000, sampleRates: [44_100, 48_000])
    /// Facebook Live: "Live Video Specs" (RTMPS only, keyframe every 2 s, AAC 128 kbps at
    /// 48 kHz, 1080p up to 6 Mbps).
    public static let facebook = Platform(name: "facebook", ingest: "rtmps://live-api-s.facebook.com:443/rtmp", keyframeSeconds: 2,
                                          videoBitrate: 6_000_000, audioBitrate: 128_000, sampleRates: [48_000])
    /// Kick (Amazon IVS ingest): RTMPS, keyframe interval 2 s, up to 8 Mbps, AAC 160 kbps.
    /// The stream URL its dashboard shows replaces this one when it differs (`url`).
    public static let kick = Platform(name: "kick", ingest: "rtmps://fa723fc1b171.global-contribute.live-video.net:443/app", keyframeSeconds: 2,
                                      videoBitrate: 8_000_000, audioBitrate: 160_000, sampleRates: [44_100, 48_000])

    public static let all = [youtube, twitch, facebook, kick]

    public static func named(_ name: String) -> Platform? { all.first { $0.name == name } }

    /// What of a stream made with these settings the platform does not take, in words
    /// (empty: all of it).
    public func problems(keyframeSeconds: Double, videoBitrate: Int, audioBitrate: Int?, sampleRate: Int?) -> [String] {
        var problems: [String] = []
        if keyframeSeconds > self.keyframeSeconds + 0.001 {
            problems.append("a keyframe every \(Self.seconds(keyframeSeconds)) s, \(name) asks for one at least every \(Self.seconds(self.keyframeSeconds)) s (hls.segment_seconds)")
        }
        if videoBitrate > self.videoBitrate {
            problems.append("video at \(videoBitrate / 1000) kbit/s, \(name) takes at most \(self.videoBitrate / 1000) (video.bitrate, or the destination's rung of video.ladder)")
        }
        if let audioBitrate, audioBitrate > self.audioBitrate {
            problems.append("AAC at \(audioBitrate / 1000) kbit/s, \(name) takes at most \(self.audioBitrate / 1000) (audio.bitrate)")
        }
        if let sampleRate, !sampleRates.contains(sampleRate) {
            problems.append("sound at \(sampleRate) Hz, \(name) takes \(sampleRates.map { String($0) }.joined(separator: " or ")) Hz (audio.sample_rate)")
        }
        return problems
    }

    private static func seconds(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
    }
}
