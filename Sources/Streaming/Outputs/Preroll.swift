import HLS
import Media

/// Where an output's stream starts: its encoder (on the timeline it was started on), the
/// stream's own timeline, and how far the encoder's timestamps are moved to land on it.
/// A stream started at a press has nothing to move; one started from a pre-roll moves
/// the encoder's armed timeline so the pre-roll's first IDR is at the stream's 10 s.
struct StreamOrigin {
    let encoder: StreamEncoder
    let timeline: Timeline
    /// Subtracted from the encoder's video (90 kHz) and audio (sample rate) timestamps.
    let shift: (video: Int64, audio: Int64)
    /// Samples made before the stream began (the pre-roll), already moved, in time order.
    let video: [EncodedSample]
    let audio: [EncodedSample]

    /// A stream that starts at `encoder`'s first frame.
    init(encoder: StreamEncoder) {
        self.encoder = encoder
        timeline = encoder.timeline
        shift = (0, 0)
        video = []
        audio = []
    }

    init(encoder: StreamEncoder, timeline: Timeline, shift: (video: Int64, audio: Int64), video: [EncodedSample], audio: [EncodedSample]) {
        self.encoder = encoder
        self.timeline = timeline
        self.shift = shift
        self.video = video
        self.audio = audio
    }

    /// The stream's grid for a grid of `ticks` on the encoder's timeline: the same
    /// boundaries, so the encoder's forced IDRs stay where the stream cuts.
    func grid(_ ticks: Int64) -> SegmentGrid {
        SegmentGrid(start: encoder.timeline.startTicks(timescale: Timescale.video) - shift.video, segmentTicks: ticks)
    }

    func moved(video sample: EncodedSample) -> EncodedSample { sample.moved(by: shift.video) }
    func moved(audio sample: EncodedSample) -> EncodedSample { sample.moved(by: shift.audio) }

    /// The held samples in time order, each with whether it is video, so a segmenter sees
    /// sound and pictures interleaved as they were made.
    func heldInTimeOrder(audioTimescale: Int64) -> [(isVideo: Bool, sample: EncodedSample)] {
        var result: [(Bool, EncodedSample)] = []
        var a = 0
        for v in video {
            while a < audio.count && audio[a].dts * Timescale.video < v.dts * audioTimescale {
                result.append((false, audio[a]))
                a += 1
            }
            result.append((true, v))
        }
        result += audio[a...].map { (false, $0) }
        return result
    }
}

extension EncodedSample {
    func moved(by ticks: Int64) -> EncodedSample {
        guard ticks != 0 else { return self }
        var copy = self
        copy.dts -= ticks
        copy.pts -= ticks
        return copy
    }
}

/// `record.preroll_seconds`: while armed, an output's encoders already run and the last
/// N seconds of what they made wait here, starting at an IDR; a start then begins with
/// the IDR at or before (press − N), frame-accurate to the GOP.
final class Preroll {
    let encoder: StreamEncoder
    let seconds: Double
    private var video: [EncodedSample] = []
    private var audio: [EncodedSample] = []
    /// The frame rate and the rungs encoded now (the heat lowers one and leaves out the
    /// top ones): what is held never spans a change of either, so a stream begins in one
    /// discontinuity domain with one set of rungs (the live path cuts a segment with a
    /// discontinuity at such a change; nothing here would).
    private var domain: (fps: Int, topRung: Int)
    /// The ladder's lowest rung, which is never left out: its IDRs are every rung's.
    private var lowest: Int { encoder.videos.count - 1 }

    init(encoder: StreamEncoder, seconds: Double) {
        self.encoder = encoder
        self.seconds = seconds
        domain = (encoder.fps, encoder.topRung)
    }

    func encode(_ frame: VideoFrame) throws {
        let made = try encoder.encode(frame)
        if encoder.fps != domain.fps || encoder.topRung != domain.topRung, let boundary = made.first(where: { $0.rung == lowest })?.dts {
            domain = (encoder.fps, encoder.topRung)
            video.removeAll()
            dropAudio(before: boundary)
        }
        video += made
        trim()
    }

    func encode(_ chunk: AudioChunk) throws {
        audio += try encoder.encode(chunk)
    }

    /// Keeps from the last IDR at or before (newest − N), and the sound from there on.
    /// Every rung has its IDR on that frame: each keeps its samples from there.
    private func trim() {
        guard let newest = video.last?.dts else { return }
        let limit = newest - Int64(seconds * Double(Timescale.video))
        guard let keep = video.last(where: { $0.isSync && $0.rung == lowest && $0.dts <= limit })?.dts,
              video.contains(where: { $0.dts < keep }) else { return }
        video.removeAll { $0.dts < keep }
        dropAudio(before: keep)
    }

    private func dropAudio(before videoTicks: Int64) {
        guard let rate = encoder.audio.map({ Int64($0.settings.sampleRate) }) else { return }
        // Sound that ends by the first picture goes; the frame that covers it stays.
        audio.removeAll { ($0.dts + $0.duration) * Timescale.video <= videoTicks * rate }
    }

    /// The stream's start: the held samples moved so the first IDR is at the stream's
    /// 10 s, on the stream's timeline and calendar.
    func origin(dating: StreamDating) -> StreamOrigin? {
        guard let first = video.first(where: { $0.rung == lowest }) else { return nil }
        dropAudio(before: first.dts)  // the AAC encoder hands frames out late
        let armed = encoder.timeline
        let start = armed.startTicks(timescale: Timescale.video)
        let shiftVideo = first.dts - start
        let rate = encoder.audio.map { Int64($0.settings.sampleRate) } ?? 48_000
        let shiftAudio = rescale(shiftVideo, from: Timescale.video, to: rate)
        let timeline = Timeline(firstVideoCaptureTime: armed.origin + rescale(shiftVideo, from: Timescale.video, to: Timescale.nanoseconds),
                                dating: dating)
        return StreamOrigin(encoder: encoder, timeline: timeline, shift: (shiftVideo, shiftAudio),
                            video: video.map { $0.moved(by: shiftVideo) }, audio: audio.map { $0.moved(by: shiftAudio) })
    }
}
