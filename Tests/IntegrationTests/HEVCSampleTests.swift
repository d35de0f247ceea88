import Foundation
import XCTest
import HLS
import Media
import MP4

/// The HEVC writer (`hvc1` with its `hvcC`, ISO/IEC 14496-15 §8.3) on real HEVC: onair links
/// no software HEVC encoder (its HEVC comes from VA-API or V4L2 M2M), so the pictures are
/// made by Debian's ffmpeg CLI with libx265 and packaged by onair's own code, then read back
/// by ffprobe and decoded by ffmpeg.
final class HEVCSampleTests: XCTestCase {
    func testHEVCSamplesPackageAsHvc1ThatFFmpegDecodes() throws {
        let dir = try temporaryDirectory("hevc-samples")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let elementary = dir + "/in.hevc"
        let make = try runTool("/usr/bin/ffmpeg", [
            "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-frames:v", "40", "-pix_fmt", "yuv420p",
            "-c:v", "libx265", "-preset", "ultrafast",
            "-x265-params", "keyint=30:min-keyint=30:scenecut=0:open-gop=0:bframes=0:log-level=error", "-f", "hevc", elementary])
        XCTAssertEqual(make.status, 0, make.stderr)

        let nals = H264.splitAnnexB(Array(try Data(contentsOf: URL(fileURLWithPath: elementary))))
        let first: (UInt8) -> [UInt8]? = { type in nals.first { HEVC.nalType($0) == type }.map(Array.init) }
        let vps = try XCTUnwrap(first(32)), sps = try XCTUnwrap(first(33)), pps = try XCTUnwrap(first(34))
        let facts = try HEVC.SPS(nal: sps[...])
        XCTAssertEqual([facts.width, facts.height], [320, 240])
        XCTAssertEqual(facts.profileTierLevel[0] & 0x1F, 1, "Main profile")
        XCTAssertTrue(facts.codecString.hasPrefix("hvc1.1.6.L"), facts.codecString)

        // One picture per access unit: a VCL NAL (types 0–31) whose first_slice_segment_in_pic_flag
        // is set starts one; parameter sets stay out of the samples (they live in the hvcC).
        var pictures: [[ArraySlice<UInt8>]] = []
        for nal in nals where HEVC.nalType(nal) < 32 && nal.count > 2 {
            if nal[nal.startIndex + 2] & 0x80 != 0 { pictures.append([]) }
            pictures[pictures.count - 1].append(nal)
        }
        XCTAssertEqual(pictures.count, 40)
        let grid = SegmentGrid(start: 0, segmentTicks: Timescale.video)
        var segmenter = Segmenter(grid: grid, tracks: .init(audio: nil), timeline: Timeline(firstVideoCaptureTime: 0, wallClockMs: 0),
                                  nominalFrameDuration: 3000)
        var bytes = InitSegment.make(video: VideoTrack(width: 320, height: 240, sps: sps, pps: pps, vps: vps), audio: nil)
        var reports: [SegmentReport] = []
        for (i, picture) in pictures.enumerated() {
            let irap = (16...23).contains(HEVC.nalType(picture[0]))
            XCTAssertEqual(irap, i % 30 == 0, "picture \(i)")
            let ticks = Int64(i) * 3000
            reports += segmenter.appendVideo(EncodedSample(data: H264.lengthPrefixed(picture), dts: ticks, pts: ticks, duration: 3000, isSync: irap))
        }
        reports += segmenter.finish()
        XCTAssertEqual(reports.count, 2, "a segment at each IRAP")
        for report in reports { bytes += report.bytes }
        let file = dir + "/out.mp4"
        try Data(bytes).write(to: URL(fileURLWithPath: file))

        let probe = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                                                     "stream=codec_name,codec_tag_string,profile,width,height,nb_read_packets",
                                                     "-of", "csv=p=0", file])
        XCTAssertEqual(String(decoding: probe.stdout, as: UTF8.self), "hevc,Main,hvc1,320,240,40\n", probe.stderr)
        let decode = try runTool("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"])
        XCTAssertEqual(decode.status, 0)
        XCTAssertEqual(decode.stderr, "", "ffmpeg reports nothing")
    }
}
