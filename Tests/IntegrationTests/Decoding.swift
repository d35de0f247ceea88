import Devices
import Foundation
import HLS
import XCTest

/// Decoding a stream back with ffmpeg and reading the synthetic source's marks: frame
/// index bands, flashes, beeps (PipelineTests, LadderTests).
extension XCTestCase {
    /// What onair's own checker of HLS_RULES.md says of a stream directory.
    func checkerFindings(_ directory: String) -> [Finding] {
        StreamChecker.check { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }
    }

    /// The synthetic frame index of each I-frame `iframes.m3u8` lists: its byte range
    /// after the init segment, decoded alone (the range ends inside the mdat, after the
    /// IDR, as RFC 8216bis §4.4.3.6 allows, so only the first frame is asked for).
    func iFrameIndices(_ stream: String, scratch: String) throws -> [UInt32] {
        let text = try String(contentsOfFile: stream + "/iframes.m3u8", encoding: .utf8)
        let iFrames = try XCTUnwrap(MediaPlaylist(parsing: text))
        XCTAssertTrue(iFrames.iFramesOnly && iFrames.isEnded)
        let initSegment = try Data(contentsOf: URL(fileURLWithPath: stream + "/init.mp4"))
        let width = 640, height = 360
        return try iFrames.entries.map { entry in
            let range = try XCTUnwrap(entry.byteRange)
            let file = try Data(contentsOf: URL(fileURLWithPath: stream + "/" + entry.uri))
            try (initSegment + file[range.offset..<(range.offset + range.length)]).write(to: URL(fileURLWithPath: scratch + ".mp4"))
            let decoded = try runBinaryTool("/usr/bin/ffmpeg", ["-v", "error", "-i", scratch + ".mp4", "-map", "0:v:0", "-frames:v", "1",
                                                                "-vf", "scale=\(width):\(height):flags=neighbor", "-f", "rawvideo",
                                                                "-pix_fmt", "gray", "-"], output: scratch + ".gray")
            // The demuxer says where the truncated mdat ends, and nothing else.
            XCTAssertEqual(decoded.status, 0, entry.uri)
            XCTAssertEqual(decoded.stderr.split(separator: "\n").filter { !$0.hasSuffix(": partial file") }, [], entry.uri)
            let luma = [UInt8](try Data(contentsOf: URL(fileURLWithPath: scratch + ".gray")))
            XCTAssertEqual(luma.count, width * height, entry.uri)
            return luma.withUnsafeBufferPointer { SyntheticPattern.decodeIndex(luma: $0, width: width, height: height) } ?? .max
        }
    }

    struct Measurement {
        /// Each frame's index band, in presentation order.
        var indices: [UInt32] = []
        /// Positions (in `indices`) of the flash frames (a repeated picture counted once).
        var flashFrames: [Int] = []
        /// Video presentation times, s.
        var pts: [Double] = []
        /// Presentation time of the first decoded audio sample, s.
        var audioStart: Double = 0
        /// Beep onsets, s.
        var onsets: [Double] = []
        /// Where the decoded sound ends (a live copy's sound may end a segment before its
        /// picture: its playlist lags).
        var audioEnd: Double = .infinity
    }

    /// Decodes a stream or file with ffmpeg and reads the synthetic source's marks back:
    /// frame index bands, flashes, beeps. `firstAudioFrame` is where the decoded audio
    /// starts, when known (an edit list makes it 0); otherwise ffprobe says.
    func measure(_ input: String, scratch: String, firstAudioFrame: Double?, video: Int = 0) throws -> Measurement {
        var m = Measurement()
        let width = 640, height = 360
        let frames = scratch + ".gray"
        XCTAssertEqual(try runBinaryTool("/usr/bin/ffmpeg", ["-v", "error", "-i", input, "-map", "0:v:\(video)",
                                                             // Passthrough: ffmpeg's default CFR output would duplicate the first
                                                             // frame to cover the 21 ms of audio priming before it.
                                                             "-fps_mode", "passthrough",
                                                             "-vf", "scale=\(width):\(height):flags=neighbor", "-f", "rawvideo",
                                                             "-pix_fmt", "gray", "-"], output: frames).status, 0)
        let pixels = try Data(contentsOf: URL(fileURLWithPath: frames))
        let frameSize = width * height
        pixels.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            for frame in 0..<(pixels.count / frameSize) {
                let luma = UnsafeBufferPointer(rebasing: bytes[(frame * frameSize)..<((frame + 1) * frameSize)])
                let index = SyntheticPattern.decodeIndex(luma: luma, width: width, height: height) ?? .max
                // A picture repeated (the encoder keeps its frame rate when the camera is
                // late, as it may be at the start on a loaded machine) is the same flash,
                // not a new one.
                let repeated = index != .max && m.indices.last == index
                m.indices.append(index)
                if !repeated && SyntheticPattern.meanLumaBelowBand(luma: luma, width: width, height: height) > 200 { m.flashFrames.append(frame) }
            }
        }
        let videoTimes = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:\(video)", "-show_entries", "frame=pts_time",
                                                          "-of", "csv=p=0", input])
        m.pts = String(decoding: videoTimes.stdout, as: UTF8.self).split(separator: "\n")
            .compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }
        XCTAssertEqual(m.pts.count, m.indices.count)
        if let firstAudioFrame { m.audioStart = firstAudioFrame } else {
            let audioStart = try runTool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "frame=pts_time",
                                                              "-read_intervals", "%+#1", "-of", "csv=p=0", input])
            m.audioStart = try XCTUnwrap(Double(String(decoding: audioStart.stdout, as: UTF8.self).split(separator: "\n")[0]
                .trimmingCharacters(in: CharacterSet(charactersIn: ","))))
        }
        let samplesPath = scratch + ".s16"
        XCTAssertEqual(try runBinaryTool("/usr/bin/ffmpeg", ["-v", "error", "-i", input, "-map", "0:a:0",
                                                             "-f", "s16le", "-ac", "1", "-ar", "48000", "-"], output: samplesPath).status, 0)
        let audio = try Data(contentsOf: URL(fileURLWithPath: samplesPath)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        m.audioEnd = m.audioStart + Double(audio.count) / 48_000
        var quiet = Int.max / 2  // the stream starts quiet: priming, then the first beep
        for (n, sample) in audio.enumerated() {
            if abs(Int(sample)) > 2000 {
                if quiet >= 2400 { m.onsets.append(m.audioStart + Double(n) / 48_000) }
                quiet = 0
            } else { quiet += 1 }
        }
        return m
    }

    /// Every flash has its beep within one video frame. For streams made in real time on a
    /// loaded machine, where the camera may drop a flash picture (its beep is then alone)
    /// or the encoder repeat one (counted once), so the two lists need not pair one to one.
    func assertEveryFlashHasItsBeep(_ m: Measurement, _ label: String, context: @autoclosure () -> String = "",
                                    file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(m.flashFrames.isEmpty, "\(label): no flash", file: file, line: line)
        // A flash past the sound's end (less a beep's rise) has no sound to be paired with.
        // One message for all the flashes without their beep: which pictures (their
        // index bands tell a stalled camera from an encoder that lags), and what the
        // caller knows (onair's own counts and log).
        var alone: [String] = []
        for frame in m.flashFrames where m.pts[frame] < m.audioEnd - 0.05 {
            let flash = m.pts[frame]
            let nearest = m.onsets.min { abs($0 - flash) < abs($1 - flash) } ?? .infinity
            if abs(nearest - flash) > 1.0 / 30 { alone.append("picture \(m.indices[frame]) at \(flash) s (nearest beep \(nearest) s)") }
        }
        XCTAssertEqual(alone, [], "\(label): A/V offset within one video frame; beeps at \(m.onsets)\n\(alone.isEmpty ? "" : context())",
                       file: file, line: line)
    }
}
