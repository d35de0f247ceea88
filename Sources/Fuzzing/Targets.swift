import Appliance
import Foundation
import HLS
import Layout
import MP4
import Server
import TestSupport

/// One reader under attack: good inputs to start from, how to spoil them, and the call that
/// must return (a thrown error is an answer; a trap, a hang or a broken promise is a find).
public struct FuzzTarget: Sendable {
    public let name: String
    public let seeds: [[UInt8]]
    let textual: Bool
    let check: @Sendable ([UInt8]) -> Void
    /// Brings up what every case needs (a running server), before any case is timed.
    let prepare: @Sendable () -> Void

    init(name: String, seeds: [[UInt8]], textual: Bool, prepare: @escaping @Sendable () -> Void = {},
         check: @escaping @Sendable ([UInt8]) -> Void) {
        self.name = name
        self.seeds = seeds
        self.textual = textual
        self.prepare = prepare
        self.check = check
    }

    public func mutate(_ input: [UInt8], _ mutator: inout Mutator) -> [UInt8] {
        textual ? mutator.mutateText(input) : mutator.mutateBytes(input, boxes: true)
    }

    /// Runs one input; a promise broken (not a thrown error) stops the process with what.
    public func run(_ input: [UInt8]) {
        prepare()
        check(input)
    }

    /// The input for case `number` (0-based): a seed, mutated unless it is a seed's own turn.
    public func input(case number: Int, seed: UInt64) -> [UInt8] {
        var mutator = Mutator(seed: seed &+ UInt64(number) &* 0x2545_F491_4F6C_DD1D)
        let base = seeds[number % seeds.count]
        return number < seeds.count ? base : mutate(base, &mutator)
    }
}

/// Said when a reader breaks a promise: the input is the find.
func broken(_ what: String) -> Never {
    FileHandle.standardError.write(Data("fuzz: promise broken: \(what)\n".utf8))
    abort()
}

public enum FuzzTargets {
    /// A stream as onair writes it (the real segmenter and writers), for seeds.
    static let stream = StreamBuilder.make(seconds: 4)
    static let secret = "FUZZSECRETFUZZSECRET42"

    /// The targets that run in this process.
    public static let all: [FuzzTarget] = [boxes, playlist, stream_, config, settings, dns, range, fetch, rtp, rtcp, stun, sdp, rtsp, soap, amf0, rtmp]
    /// The targets that send requests to a server: a round trip per case.
    public static let servers: [FuzzTarget] = [http, api]

    public static func named(_ name: String) -> FuzzTarget? { (all + servers).first { $0.name == name } }

    /// ISO/IEC 14496-12 boxes: init segments, media segments, and a recording `.part`.
    static let boxes = FuzzTarget(name: "boxes", seeds: [stream.files[StreamLayout.initSegment]!, stream.files[StreamLayout.segment(1)]!,
                                                         stream.files[StreamLayout.initSegment]! + stream.files[StreamLayout.segment(2)]!],
                                  textual: false) { bytes in
        _ = try? BoxTree.parse(bytes)
        let initSegment = try? ParsedInit(bytes: bytes)
        _ = try? ParsedSegment(bytes: bytes, trex: initSegment?.trex ?? [])
        // As the recording's recovery reads a .part, and builds the finished file's moov.
        if let scan = try? FragmentedFile.scan(size: Int64(bytes.count), read: { offset, count in
            offset >= 0 && count >= 0 && Int(offset) + count <= bytes.count ? Array(bytes[Int(offset)..<(Int(offset) + count)]) : nil
        }) {
            _ = ProgressiveMovie.header(tracks: scan.tracks) + ProgressiveMovie.mdatHeader(payloadSize: scan.payloadSize)
        }
    }

    /// RFC 8216bis playlists: the parser, onair's own reading of them, the catalogue, reloads.
    static let playlist = FuzzTarget(name: "playlist", seeds: [Array(stream[StreamLayout.playlist]!.utf8), Array(stream[StreamLayout.index]!.utf8),
                                                               Array(stream[StreamLayout.playlist]!.replacingOccurrences(of: "#EXT-X-ENDLIST\n", with: "").utf8)],
                                     textual: true) { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        let parsed = ParsedPlaylist(text: text)
        _ = parsed.segments.map(\.duration)
        if let media = MediaPlaylist(parsing: text) { _ = media.render() }
        _ = ReloadChecker.check(previous: stream[StreamLayout.playlist]!, next: text)
        // One bad stream never hides the others (issue 13: `EXTINF:NaN` emptied /api/streams).
        let good = StreamInfo(id: "good", playlist: stream[StreamLayout.playlist]!, playlistURL: "/g")
        let bad = StreamInfo(id: "bad", playlist: text, playlistURL: "/b")
        guard let list = try? JSONSerialization.jsonObject(with: Data(StreamInfo.json([good, bad]))) as? [Any], list.count == 2 else {
            broken("StreamInfo.json lost a stream")
        }
    }

    /// A whole stream checked with one of its files spoiled. The input is the file's name,
    /// a newline, and its bytes.
    static let stream_ = FuzzTarget(name: "stream", seeds: [StreamLayout.playlist, StreamLayout.index, StreamLayout.initSegment, StreamLayout.segment(2)].map {
        Array(($0 + "\n").utf8) + stream.files[$0]!
    }, textual: false) { bytes in
        guard let newline = bytes.firstIndex(of: 0x0A) else { return }
        let name = String(decoding: bytes[..<newline], as: UTF8.self)
        var files = stream.files
        files[name] = Array(bytes[(newline + 1)...])
        _ = StreamChecker.check { files[$0] }
    }

    /// onair.conf: every message names its line and never holds a secret's value.
    static let config = FuzzTarget(name: "config", seeds: [
        Array("[video]\nfps = 30\nwidth = 1280\nheight = 720\nbitrate = 1.5M\n[publish]\nurl = s3://bucket/live/\nheader = X-A: 1\n[publish.s3]\nsecret_key = \(secret)\naccess_key = AKIA\n[server]\nlisten = 127.0.0.1:8080\ntoken = \(secret)\n[storage]\nmin_free = 10%\n".utf8),
        Array("[destination.yt]\npreset = youtube\nkey = \(secret)\n[destination.own]\nurl = rtmp://host:99999/live/\(secret)\n[destination.srt]\nurl = srt://host:9000?passphrase=\(secret)&latency=90000\npassphrase = \(secret)\nlatency_ms = 200\nrung = 2\n".utf8),
        Array("[wifi]\nssid = home \"net\" # x\npassword = \"\(secret) #\"\ncountry = GB\n[wifi.office]\nssid = Office\npassword = \(secret)\nsecurity = wpa3\npriority = 7\nhidden = true\n".utf8),
        Array("# board\r\n[thermal]\r\nfps_steps = 30,24,15\r\nhot_c = 80\r\n[button]\r\ngpio = gpiochip0:17\r\nlong_press_s = 3\r\n[record]\r\npreroll_seconds = 2.5\r\n".utf8)
    ] + boardConfigs, textual: true) { bytes in
        var settings = Settings()
        do { try ConfigFile.apply(try ConfigFile.parse(bytes, file: "onair.conf"), to: &settings) } catch {
            let message = "\(error)"
            if message.contains(secret) || message.contains(String(secret.prefix(10))) { broken("a secret in: \(message)") }
            if message.contains("\n") || message.contains("\r") { broken("a message of more than one line") }
            if !message.hasPrefix("onair.conf:") { broken("a message that names no line: \(message)") }
        }
    }

    static var boardConfigs: [[UInt8]] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return ["qemu-x86_64", "rpi4"].compactMap { FileManager.default.contents(atPath: root.path + "/board/\($0)/onair.conf").map(Array.init) }
    }

    /// RFC 9110 §14.1.2 Range headers: whatever comes back lies inside the file.
    static let range = FuzzTarget(name: "range", seeds: ["bytes=0-499", "bytes=-5", "bytes=100-", "Bytes=5-10", "bytes=0-0,5-9"].map { Array($0.utf8) },
                                  textual: true) { bytes in
        let header = String(decoding: bytes, as: UTF8.self)
        for size: Int64 in [0, 1, 100, Int64.max] {
            switch ByteRange.parse(header, size: size) {
            case .none, .unsatisfiable: break
            case .range(let first, let last):
                if !(0 <= first && first <= last && last < size) { broken("range \(first)-\(last) of \(size) from '\(header)'") }
            }
        }
    }
}
