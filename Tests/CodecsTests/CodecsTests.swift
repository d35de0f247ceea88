import Foundation
import XCTest
import TestSupport
@testable import Codecs
import Devices
import Media

final class VideoEncoderTests: XCTestCase {
    let settings = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrate: 300_000, keyframeInterval: 60)

    func testX264GivesHighProfileNoBFramesAndIDRsExactlyWhereAsked() throws {
        let encoder = try VideoEncoder(kind: .x264, settings: settings)
        let sps = try H264SPS(nal: encoder.sps[...])
        XCTAssertEqual(sps.profileIdc, 100, "High profile")
        XCTAssertEqual([sps.width, sps.height], [320, 240])
        XCTAssertEqual(H264.nalType(encoder.pps[...]), 8)
        let pattern = SyntheticPattern(width: 320, height: 240, fps: 30)
        var samples: [EncodedSample] = []
        var inputTicks: [Int64] = []
        for i in 0..<130 {
            let ticks = 900_000 + Int64(i) * 3000
            inputTicks.append(ticks)
            samples += try encoder.encode(pattern.frame(index: Int64(i), captureTime: 0), ticks: ticks, keyframe: [0, 60, 120].contains(i))
        }
        samples += try encoder.flush()
        XCTAssertEqual(samples.count, 130)
        XCTAssertEqual(samples.map(\.dts), inputTicks, "one sample per frame, in order, at its own time")
        XCTAssertTrue(samples.allSatisfy { $0.pts == $0.dts }, "no B-frames: no reordering")
        XCTAssertEqual(samples.indices.filter { samples[$0].isSync }, [0, 60, 120], "IDRs exactly at the forced frames, none elsewhere")
        for sample in samples {
            let types = try H264.splitLengthPrefixed(sample.data).map { H264.nalType($0) }
            XCTAssertFalse(types.contains(7) || types.contains(8) || types.contains(9), "parameter sets live in the avcC: \(types)")
            XCTAssertEqual(types.contains(5), sample.isSync)
        }
    }

    /// A 1280x720 camera feeding a 320x240 encoder: libswscale scales on the way in, and
    /// every decoded picture still carries its frame index.
    func testPicturesOfAnotherSizeAreScaled() throws {
        let encoder = try VideoEncoder(kind: .x264, settings: settings)
        let pattern = SyntheticPattern(width: 1280, height: 720, fps: 30)
        var stream = [UInt8]()
        func annexB(_ units: [ArraySlice<UInt8>]) { for unit in units { stream += [0, 0, 0, 1] + unit } }
        annexB([encoder.sps[...], encoder.pps[...]])
        var samples: [EncodedSample] = []
        for i in 0..<10 {
            samples += try encoder.encode(pattern.frame(index: Int64(i), captureTime: 0), ticks: Int64(i) * 3000, keyframe: i == 0)
        }
        samples += try encoder.flush()
        for sample in samples { annexB(try H264.splitLengthPrefixed(sample.data)) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onair-scale-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(stream).write(to: URL(fileURLWithPath: directory + "/in.h264"))
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-f", "h264", "-i", directory + "/in.h264", "-f", "rawvideo", "-pix_fmt", "gray", directory + "/out.gray"]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        let luma = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.gray")))
        XCTAssertEqual(luma.count, 10 * 320 * 240, "ten pictures at the encoder's size")
        let indices = (0..<10).map { n in
            luma[(n * 320 * 240)..<((n + 1) * 320 * 240)].withUnsafeBufferPointer { SyntheticPattern.decodeIndex(luma: $0, width: 320, height: 240) }
        }
        XCTAssertEqual(indices, (0..<10).map { UInt32($0) })
    }

    /// HEVC comes from hardware encoders only: x264 refuses it, and `auto` with no VA-API or
    /// V4L2 device says no encoder opened (the recording then falls back to H.264).
    func testHEVCNeedsAHardwareEncoder() throws {
        var hevc = settings
        hevc.codec = .hevc
        XCTAssertThrowsError(try VideoEncoder(kind: .x264, settings: hevc), "x264 does not encode HEVC")
        XCTAssertThrowsError(try VideoEncoder.select(.auto, settings: hevc, devRoot: "/nonexistent") { _, _ in }) { error in
            XCTAssertEqual("\(error)", "no hardware HEVC encoder could be opened")
        }
    }

    /// The static libavcodec has every encoder onair can select and the MJPEG decoder, asked
    /// by name; `onair version` reports the same list (toolchain/check-binary.sh reads it).
    func testTheLinkedLibavcodecHasEveryCodecOnairSelects() {
        XCTAssertEqual(CodecLibrary.requiredEncoders, ["libx264", "h264_vaapi", "hevc_vaapi", "h264_v4l2m2m", "hevc_v4l2m2m", "aac", "mjpeg"])
        XCTAssertEqual(CodecLibrary.missing, [])
        XCTAssertTrue(CodecLibrary.versions.contains { $0.name == "libavcodec" })
    }

    func testAutoFallsBackToX264AndSaysWhy() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-dev-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var notes: [String] = []
        let encoder = try VideoEncoder.select(.auto, settings: settings, devRoot: root) { notes.append("\($0.rawValue): \($1)") }
        XCTAssertEqual(encoder.kind, .x264)
        XCTAssertEqual(notes, ["vaapi: no DRM render node", "v4l2m2m: no V4L2 device node", "x264: selected"])
    }

    func testVAAPIOnANodeThatIsNoGPUFailsWithAReason() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onair-dev-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/dri", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: root + "/dri/renderD128", contents: Data())
        defer { try? FileManager.default.removeItem(atPath: root) }
        var notes: [String] = []
        let encoder = try VideoEncoder.select(.auto, settings: settings, devRoot: root) { notes.append("\($0.rawValue): \($1)") }
        XCTAssertEqual(encoder.kind, .x264)
        XCTAssertTrue(notes[0].hasPrefix("vaapi: opening VA-API on \(root)/dri/renderD128"), notes[0])
        XCTAssertThrowsError(try VideoEncoder.select(.vaapi, settings: settings, devRoot: root) { _, _ in })
    }

    /// `video.encoder = vaapi` on a machine without a GPU: one line that says why.
    func testVAAPIWithoutAGPUSaysWhy() {
        XCTAssertThrowsError(try VideoEncoder.select(.vaapi, settings: settings, devRoot: "/nonexistent") { _, _ in }) { error in
            XCTAssertEqual("\(error)", "video encoder vaapi: no DRM render node (/nonexistent/dri/renderD*): this machine has no VA-API GPU")
        }
    }
}

final class AACEncoderTests: XCTestCase {
    func testAACLCWithPrimingAndContinuousTimestamps() throws {
        let encoder = try AACEncoder(settings: .init(sampleRate: 48_000, channels: 1, bitrate: 64_000))
        let config = try AudioSpecificConfig(bytes: encoder.audioSpecificConfig)
        XCTAssertEqual(config.objectType, 2)
        XCTAssertEqual(config.sampleRate, 48_000)
        XCTAssertEqual(config.channelConfiguration, 1)
        XCTAssertEqual(encoder.priming, 1024)
        XCTAssertEqual(encoder.frameSize, 1024)
        let tone = SyntheticTone(sampleRate: 48_000, channels: 1)
        var packets: [EncodedSample] = []
        var first: Int64 = 0
        for chunk in 0..<50 {  // 1 s in 20 ms chunks
            packets += try encoder.encode(tone.samples(from: first, count: 960), startTicks: 480_000)
            first += 960
        }
        packets += try encoder.flush()
        XCTAssertEqual(packets.first?.dts, 480_000 - 1024, "the first packet starts one priming frame early")
        for (a, b) in zip(packets, packets.dropFirst()) { XCTAssertEqual(b.dts, a.dts + 1024) }
        XCTAssertTrue(packets.allSatisfy { $0.duration == 1024 && $0.isSync && !$0.data.isEmpty })
        // 48000 samples + 1024 priming, in whole frames.
        XCTAssertEqual(packets.count, (48_000 + 1024 + 1023) / 1024)
        XCTAssertFalse(packets.contains { $0.data.count > 1 && $0.data[0] == 0xFF && $0.data[1] & 0xF0 == 0xF0 }, "raw AUs, no ADTS")
    }
}

/// USB cameras' MJPEG, decoded by libavcodec into the I420 the pipeline carries, checked
/// against ffmpeg's own decode of the same picture.
final class MJPEGDecoderTests: XCTestCase {
    func ffmpeg(_ arguments: [String]) throws -> Data {
        let (status, output) = try toolOutput("/usr/bin/ffmpeg", ["-v", "error"] + arguments)
        XCTAssertEqual(status, 0)
        return output
    }

    func jpeg(_ layout: String) throws -> [UInt8] {
        Array(try ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=64x48", "-frames:v", "1", "-pix_fmt", layout, "-q:v", "2",
                          "-f", "mjpeg", "-"]))
    }

    func testWebcamLayoutsDecodeToI420() throws {
        let decoder = try MJPEGDecoder()
        for layout in ["yuvj422p", "yuvj420p"] {
            let picture = try jpeg(layout)
            let planes = try picture.withUnsafeBytes { try decoder.decode($0, width: 64, height: 48) }
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("onair-\(UUID().uuidString).jpg").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            try Data(picture).write(to: URL(fileURLWithPath: path))
            // ffmpeg's own decode, scaled to video range (yuv420p) as the encoders take it.
            let reference = Array(try ffmpeg(["-i", path, "-sws_flags", "area+accurate_rnd+full_chroma_int", "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]))
            XCTAssertEqual(planes.count, reference.count)
            let luma = 64 * 48
            let lumaDifferences = zip(planes[..<luma], reference[..<luma]).map { abs(Int($0) - Int($1)) }
            XCTAssertLessThanOrEqual(lumaDifferences.max() ?? 99, 1, "\(layout): luma in video range as ffmpeg maps it, within rounding")
            let differences = zip(planes[luma...], reference[luma...]).map { abs(Int($0) - Int($1)) }
            XCTAssertLessThanOrEqual(differences.max() ?? 99, 2, "\(layout): chroma as ffmpeg scales it, within rounding")
            XCTAssertGreaterThanOrEqual(planes.min() ?? 0, 16, "nothing below video black")
        }
    }

    /// What a cheap webcam may send: a JPEG cut short, one with garbage in its entropy
    /// data or its header, nothing at all. Each is an error or a whole picture, never a
    /// crash; and the decoder still decodes the next good one.
    func testBrokenJPEGsAreErrorsOrWholePicturesAndTheNextGoodOneDecodes() throws {
        let decoder = try MJPEGDecoder()
        let good = try jpeg("yuvj422p")
        var broken: [[UInt8]] = [Array(good.prefix(good.count / 2)), Array(good.prefix(20)), [], [0xFF, 0xD8, 0xFF, 0xD9]]
        var scrambled = good
        for i in stride(from: good.count / 3, to: good.count - 2, by: 7) { scrambled[i] ^= 0x5A }
        broken.append(scrambled)
        var header = good
        for i in 2..<min(40, header.count) { header[i] = 0xFF }
        broken.append(header)
        for bytes in broken {
            if let picture = try? bytes.withUnsafeBytes({ try decoder.decode($0, width: 64, height: 48) }) {
                XCTAssertEqual(picture.count, VideoFrame.byteCount(width: 64, height: 48), "a picture is whole or none")
            }
        }
        let after = try good.withUnsafeBytes { try decoder.decode($0, width: 64, height: 48) }
        XCTAssertEqual(after.count, VideoFrame.byteCount(width: 64, height: 48))
    }

    /// A JPEG cut short decodes in libavcodec to a picture grey below the cut; the decoder
    /// refuses it, as it refuses one without its start. Zeros after the end, as some
    /// webcams pad their buffers, are a whole JPEG still.
    func testAJPEGWithoutItsEndIsRefusedAndPaddingIsNot() throws {
        let decoder = try MJPEGDecoder()
        let good = try jpeg("yuvj422p")
        for cut in [good.count - 2, good.count * 3 / 4, good.count / 2] {
            XCTAssertThrowsError(try Array(good.prefix(cut)).withUnsafeBytes { try decoder.decode($0, width: 64, height: 48) }) {
                XCTAssertEqual($0 as? CodecError, .incompleteJPEG(bytes: cut))
            }
        }
        XCTAssertThrowsError(try Array(good.dropFirst(2)).withUnsafeBytes { try decoder.decode($0, width: 64, height: 48) })
        let padded = good + [UInt8](repeating: 0, count: 300)
        XCTAssertEqual(try padded.withUnsafeBytes { try decoder.decode($0, width: 64, height: 48) }.count,
                       VideoFrame.byteCount(width: 64, height: 48))
        XCTAssertThrowsError(try [UInt8](repeating: 0, count: 8).withUnsafeBytes { try decoder.decode($0, width: 64, height: 48) })
    }

    func testASizeOtherThanNegotiatedIsAnErrorNotACrash() throws {
        let decoder = try MJPEGDecoder()
        let picture = try jpeg("yuvj422p")
        XCTAssertThrowsError(try picture.withUnsafeBytes { try decoder.decode($0, width: 320, height: 240) })
        XCTAssertThrowsError(try [UInt8](repeating: 0xFF, count: 100).withUnsafeBytes { try decoder.decode($0, width: 64, height: 48) })
    }
}

final class PictureConverterTests: XCTestCase {
    /// The synthetic picture's white and black index blocks come out white and black in
    /// XRGB8888, scaled to half size.
    func testI420ToXRGBScaled() {
        let pattern = SyntheticPattern(width: 1280, height: 720, fps: 30)
        let frame = pattern.frame(index: 1, captureTime: 0)  // block 31 (bit 0) white, block 30 black
        let width = 640, height = 360, pitch = width * 4
        var pixels = [UInt8](repeating: 0x55, count: pitch * height)
        pixels.withUnsafeMutableBytes { PictureConverter().draw(frame, into: $0.baseAddress!, pitch: pitch, width: width, height: height) }
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(pixels[(y * pitch + x * 4)..<(y * pitch + x * 4 + 3)]) }
        XCTAssertTrue(pixel(31 * 20 + 10, 5).allSatisfy { $0 > 240 }, "white: \(pixel(31 * 20 + 10, 5))")
        XCTAssertTrue(pixel(30 * 20 + 10, 5).allSatisfy { $0 < 20 }, "black: \(pixel(30 * 20 + 10, 5))")
    }
}

/// Snapshots: libavcodec's MJPEG encoder, the camera's video-range I420 stretched to JFIF's
/// full range first.
final class JPEGEncoderTests: XCTestCase {
    func testAPictureBecomesAFullRangeJPEG() throws {
        let (width, height) = (64, 32)
        var planes = [UInt8](repeating: 128, count: VideoFrame.byteCount(width: width, height: height))
        // Video black (16) on the top half, video white (235) below.
        for row in 0..<height { for x in 0..<width { planes[row * width + x] = row < height / 2 ? 16 : 235 } }
        let encoder = try JPEGEncoder(width: width, height: height)
        let jpeg = try encoder.encode(VideoFrame(width: width, height: height, planes: planes, captureTime: 0, index: 0))
        XCTAssertEqual(Array(jpeg.prefix(2)), [0xFF, 0xD8], "SOI")
        XCTAssertEqual(Array(jpeg.suffix(2)), [0xFF, 0xD9], "EOI")
        // The JPEG holds black as 0 and white as 255 (ffmpeg reads it); the decoder, which
        // feeds the encoders, maps them back to video range: the round trip keeps them.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("onair-\(UUID().uuidString).jpg").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(jpeg).write(to: URL(fileURLWithPath: file))
        let (status, gray) = try toolOutput("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        XCTAssertEqual(status, 0)
        XCTAssertLessThanOrEqual(Int(gray[4 * width + 8]), 3)
        XCTAssertGreaterThanOrEqual(Int(gray[(height - 4) * width + 8]), 252)
        let decoded = try jpeg.withUnsafeBytes { try MJPEGDecoder().decode($0, width: width, height: height) }
        XCTAssertEqual(Int(decoded[4 * width + 8]), 16, accuracy: 2)
        XCTAssertEqual(Int(decoded[(height - 4) * width + 8]), 235, accuracy: 2)
        XCTAssertEqual(Int(decoded[width * height + 5]), 128, accuracy: 2, "grey chroma stays grey")
        // The same encoder makes the next picture too (a snapshot is asked for again and again).
        XCTAssertEqual(try encoder.encode(VideoFrame(width: width, height: height, planes: planes, captureTime: 1, index: 1)).prefix(2), [0xFF, 0xD8])
        XCTAssertThrowsError(try encoder.encode(VideoFrame(width: 32, height: 32, planes: [UInt8](repeating: 0, count: VideoFrame.byteCount(width: 32, height: 32)),
                                                           captureTime: 0, index: 1)))
    }
}
