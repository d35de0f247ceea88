import Foundation
import Media
import RTP
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The packetizer through a real receiver's eyes: FFmpeg's RTP demuxer (libavformat's
/// rtpdec_h264, its own reading of RFC 6184) takes what onair's H264Packetizer sends over
/// UDP and decodes every picture to the same bytes as the stream it came from.
final class RTPClientTests: XCTestCase {
    var work = ""
    override func setUpWithError() throws {
        work = NSTemporaryDirectory() + "onair-rtp-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: work) }

    func testFFmpegDecodesThePacketizedStreamPictureForPicture() throws {
        // 60 frames of x264 with access unit delimiters (so the units can be told apart),
        // an IDR every 30, two slices a picture (large ones need FU-A, small ones share a
        // STAP-A), small enough in all to fit a socket's receive buffer when sent at once; no B-frames, so decode order
        // is presentation order and the frame index gives the RTP timestamp (which is the
        // sampling time, RFC 6184 §5.1).
        let source = work + "/source.h264"
        let made = try toolOutput("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "60",
                                                      "-c:v", "libx264", "-preset", "veryfast", "-x264-params", "aud=1:keyint=30:min-keyint=30:slices=2:bframes=0",
                                                      "-pix_fmt", "yuv420p", "-f", "h264", source])
        XCTAssertEqual(made.status, 0)
        let units = H264.splitAnnexB(Array(try Data(contentsOf: URL(fileURLWithPath: source))))
        var accessUnits: [[ArraySlice<UInt8>]] = []
        for unit in units {
            if H264.nalType(unit) == H264.NALType.accessUnitDelimiter.rawValue || accessUnits.isEmpty { accessUnits.append([]) }
            accessUnits[accessUnits.count - 1].append(unit)
        }
        XCTAssertEqual(accessUnits.count, 60)

        // The receiver: an SDP naming the port, as an RTSP DESCRIBE or a WHEP answer would.
        let port = try Self.freeEvenUDPPort()
        let sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=onair\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video \(port) RTP/AVP 96\r\n"
            + "a=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n"
        try sdp.write(toFile: work + "/stream.sdp", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: work + "/ffmpeg.log", contents: nil)
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        receiver.arguments = ["-v", "error", "-threads", "1", "-analyzeduration", "500000", "-protocol_whitelist", "file,udp,rtp", "-i", work + "/stream.sdp",
                              "-frames:v", "60", "-vsync", "passthrough", "-f", "framemd5", work + "/received.md5"]
        receiver.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: work + "/ffmpeg.log"))
        try receiver.run()
        defer { if receiver.isRunning { receiver.terminate() } }
        // Bound once /proc lists the port (a real process: a bounded wait).
        let deadline = Date().addingTimeInterval(10)
        while !Self.udpPortIsBound(port) && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(Self.udpPortIsBound(port), "ffmpeg did not bind \(port)")

        let socket = try XCTUnwrap(UDPServer())
        var stream = RTPStream(ssrc: 0x0A1B_2C3D, payloadType: 96, clockRate: 90_000, firstSequence: 65_000, timestampOffset: 12_345)
        let packetizer = H264Packetizer()
        var sent = 0, fragments = 0, aggregates = 0
        for (frame, unit) in accessUnits.enumerated() {
            let payloads = packetizer.payloads(unit)
            fragments += payloads.filter { $0[0] & 0x1F == 28 }.count
            aggregates += payloads.filter { $0[0] & 0x1F == 24 }.count
            for packet in stream.packets(payloads, timestamp: stream.timestamp(ticks: Int64(frame) * 3000, timescale: 90_000)) {
                XCTAssertTrue(socket.send(packet.serialized(), toPort: port))
                sent += 1
            }
        }
        XCTAssertGreaterThan(fragments, 0, "some units were large enough for FU-A")
        XCTAssertGreaterThan(aggregates, 0, "and some small enough to share a STAP-A")
        // FFmpeg's parser ends a unit when the next begins: an access unit delimiter after
        // the last one lets it hand over the 60th picture without waiting for a timeout.
        let delimiter = stream.packets([[0x09, 0xF0]], timestamp: stream.timestamp(ticks: 60 * 3000, timescale: 90_000))
        XCTAssertTrue(socket.send(delimiter[0].serialized(), toPort: port))
        let end = Date().addingTimeInterval(20)
        while receiver.isRunning && Date() < end { usleep(20_000) }
        XCTAssertFalse(receiver.isRunning, "ffmpeg did not get 60 pictures from \(sent) packets: "
                       + ((try? String(contentsOfFile: work + "/ffmpeg.log", encoding: .utf8)) ?? ""))

        let expected = try toolOutput("/usr/bin/ffmpeg", ["-v", "error", "-i", source, "-f", "framemd5", "-"])
        func hashes(_ text: String) -> [String] {
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) }
        }
        let received = hashes(try String(contentsOfFile: work + "/received.md5", encoding: .utf8))
        XCTAssertEqual(received.count, 60)
        XCTAssertEqual(received, hashes(String(decoding: expected.stdout, as: UTF8.self)), "every picture decodes to the same bytes")
    }

    /// An even port (RTP's; RTCP takes the next) that nothing holds now.
    static func freeEvenUDPPort() throws -> UInt16 {
        for _ in 0..<50 {
            guard let probe = UDPServer(), probe.port % 2 == 0, probe.port < 65_000 else { continue }
            return probe.port
        }
        throw XCTSkip("no free even UDP port")
    }

    /// Whether a UDP socket is bound to 127.0.0.1:port or 0.0.0.0:port (/proc/net/udp).
    static func udpPortIsBound(_ port: UInt16) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8) else { return false }
        let hex = String(format: ":%04X ", port)
        return table.split(separator: "\n").dropFirst().contains { line in
            line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map { ($0 + " ").hasSuffix(hex) } ?? false
        }
    }
}
