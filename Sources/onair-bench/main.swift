import Devices
import Files
import Foundation
import HLS
import Layout
import Media
import MP4
import Publishing
import Spool

// onair-bench frames W H FPS SECONDS: writes the synthetic camera's frames as raw I420 to
// stdout, so `make bench` can give ffmpeg exactly the pictures onair encodes (x264's work
// depends on the picture, so a different test pattern would compare different jobs).
//
// onair-bench package SRC DST [--repeat N]: reads a stream onair wrote (init.mp4 + the segments its
// playlist lists), takes every coded sample out of it, and packages them again through
// the same Segmenter and StreamWriter the live path uses (fMP4 fragments, playlists,
// temp → fsync → rename). `make bench` times it against `ffmpeg -c copy -f hls` on the
// same input, so only the packaging differs. With --repeat, the samples go round N times
// (times moved on by the stream's length each time): a long stream made in seconds, for
// the export and fetch measurements.

struct Track {
    var id: UInt32
    var timescale: Int64
    var samples: [EncodedSample] = []
}

func fail(_ message: String) -> Never {
    _ = "onair-bench: \(message)\n".withCString { write(2, $0, strlen($0)) }
    exit(2)
}

func read(_ path: String) -> [UInt8] {
    guard let data = FileSystem.read(path) else { fail("cannot read \(path)") }
    return Array(data)
}

let arguments = CommandLine.arguments
if arguments.count == 6, arguments[1] == "frames",
   let width = Int(arguments[2]), let height = Int(arguments[3]), let fps = Int(arguments[4]), let seconds = Int(arguments[5]) {
    let pattern = SyntheticPattern(width: width, height: height, fps: fps)
    for index in 0..<Int64(fps * seconds) {
        let frame = pattern.frame(index: index, captureTime: pattern.offset(of: index))
        frame.planes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(1, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { exit(1) }
                offset += n
            }
        }
    }
    exit(0)
}
guard arguments.count == 4 || (arguments.count == 6 && arguments[4] == "--repeat"), arguments[1] == "package" else {
    fail("usage: onair-bench package SRC_STREAM_DIR DST_ROOT [--repeat N] | onair-bench frames W H FPS SECONDS")
}
let repeats = arguments.count == 6 ? max(1, Int(arguments[5]) ?? 1) : 1
let source = arguments[2], destination = arguments[3]

// Demux: every sample with its decode time and duration.
let initBytes = read(source + "/" + StreamLayout.initSegment)
let initSegment: ParsedInit
do { initSegment = try ParsedInit(bytes: initBytes) } catch { fail("\(source)/\(StreamLayout.initSegment): \(error)") }
guard let videoInfo = initSegment.track("vide") else { fail("no video track") }
let audioInfo = initSegment.track("soun")
var video = Track(id: videoInfo.trackID, timescale: Int64(videoInfo.timescale))
var audio = audioInfo.map { Track(id: $0.trackID, timescale: Int64($0.timescale)) }
let playlist = ParsedPlaylist(text: String(decoding: read(source + "/" + StreamLayout.playlist), as: UTF8.self))
for entry in playlist.segments {
    let bytes = read(source + "/" + entry.uri)
    let segment: ParsedSegment
    do { segment = try ParsedSegment(bytes: bytes, trex: initSegment.trex) } catch { fail("\(entry.uri): \(error)") }
    for traf in segment.fragments.flatMap(\.trafs) {
        var time = Int64(traf.baseDecodeTime)
        let samples = traf.samples.map { sample -> EncodedSample in
            defer { time += Int64(sample.duration) }
            return EncodedSample(data: Array(bytes[sample.range]), dts: time, pts: time + Int64(sample.compositionOffset),
                                 duration: Int64(sample.duration), isSync: sample.isSync)
        }
        if traf.trackID == video.id { video.samples += samples } else if traf.trackID == audio?.id { audio?.samples += samples }
    }
}
guard let first = video.samples.first, let sps = videoInfo.sps.first, let pps = videoInfo.pps.first else { fail("no video samples") }

// Package: interleave by time, as the encoders deliver, through the live path's code.
let frameDuration = first.duration
let timeline = Timeline(firstVideoCaptureTime: 0, wallClockMs: 1_796_229_753_000)
let segmentTicks = Int64((playlist.value("EXT-X-TARGETDURATION").flatMap(Int64.init) ?? 2)) * video.timescale
let grid = SegmentGrid(start: first.dts, segmentTicks: segmentTicks)
var segmenter = Segmenter(grid: grid, tracks: .init(video: video.id, videoTimescale: video.timescale,
                                                    audio: audio?.id, audioTimescale: audio?.timescale ?? 48_000),
                          timeline: timeline, nominalFrameDuration: frameDuration)
let codecs = [try! H264SPS(nal: sps[...]).codecString] + (audioInfo.flatMap { try? AudioSpecificConfig(bytes: $0.audioConfig).codecString }.map { [$0] } ?? [])
let description = StreamDescription(codecs: codecs, width: videoInfo.width, height: videoInfo.height,
                                    fps: Int(video.timescale / max(frameDuration, 1)), configuredBitrate: 1_564_000,
                                    targetDuration: Int(segmentTicks / video.timescale))
let writer: StreamWriter
do {
    writer = try StreamWriter(root: destination, id: "bench", description: description,
                              initSegment: InitSegment.make(
                                video: VideoTrack(trackID: video.id, timescale: UInt32(video.timescale), width: videoInfo.width,
                                                  height: videoInfo.height, sps: sps, pps: pps),
                                audio: audioInfo.map { AudioTrack(trackID: $0.trackID, sampleRate: $0.sampleRate, channels: $0.channelCount,
                                                                  config: $0.audioConfig, averageBitrate: 64_000) }))
} catch { fail("\(error)") }
// Going round: every pass moved on by the stream's length, made as it is packaged, so a long stream needs no more memory than the source.
let span = (video.samples.last.map { $0.dts + $0.duration } ?? 0) - first.dts
// Each track goes round by its own length, so both stay continuous (the sound drifts
// from the picture by under a frame a round: nothing a throughput figure notices).
let audioSpan = audio.map { track in (track.samples.last.map { $0.dts + $0.duration } ?? 0) - (track.samples.first?.dts ?? 0) } ?? 0
func later(_ sample: EncodedSample, _ ticks: Int64) -> EncodedSample {
    var copy = sample
    copy.dts += ticks
    copy.pts += ticks
    return copy
}
do {
    for round in 0..<Int64(repeats) {
        var a = 0
        for sample in video.samples {
            while let track = audio, a < track.samples.count,
                  track.samples[a].dts * video.timescale <= sample.dts * track.timescale {
                for report in segmenter.appendAudio(later(track.samples[a], round * audioSpan)) { try writer.append(report) }
                a += 1
            }
            for report in segmenter.appendVideo(later(sample, round * span)) { try writer.append(report) }
        }
        while let track = audio, a < track.samples.count {
            for report in segmenter.appendAudio(later(track.samples[a], round * audioSpan)) { try writer.append(report) }
            a += 1
        }
    }
    for report in segmenter.finish() { try writer.append(report) }
    try writer.finish()
} catch { fail("\(error)") }
print("{\"video_samples\":\(video.samples.count * repeats),\"audio_samples\":\((audio?.samples.count ?? 0) * repeats),\"segments\":\(writer.segmentCount),\"bytes\":\(writer.totalBytes)}")
