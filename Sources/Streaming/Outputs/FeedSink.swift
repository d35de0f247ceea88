import HLS
import Live
import Media
import System

/// The live stream's samples published into the live feed, the live encoders' one sink.
/// Every sample of every rung, each change and the end go to the complete readers (the
/// HLS packager). The real-time outputs (WebRTC, RTSP) and destinations get the pictures
/// of their rung (the top encoded now, unless a destination asks for a lower one), each
/// with its capture time, its rung as configured and the parameter sets a viewer who
/// joins at its IDR needs, the AAC as encoded, and the microphone's sound as captured;
/// samples more than a second old (the pre-roll, held since before the press) are not
/// real time and are left out of those.
final class FeedSink: EncodedSink {
    private let feed: LiveFeed
    private let origin: StreamOrigin
    private var topRung: Int
    /// The configured ladder's top rungs the cost check left out before the stream's
    /// encoders were made: the encoders' rung 0 is the configured rung `firstRung`.
    private let firstRung: Int
    private let id: String
    private var ended = false

    /// Older than this, a picture has no place in a real-time view.
    static let staleNanoseconds: Int64 = 1_000_000_000

    init(feed: LiveFeed, origin: StreamOrigin, id: String, firstRung: Int = 0) {
        self.feed = feed
        self.origin = origin
        self.id = id
        self.firstRung = firstRung
        topRung = origin.encoder.topRung
        let audio = origin.encoder.audio.map {
            RealTimeStream.Audio(config: $0.audioSpecificConfig, sampleRate: $0.settings.sampleRate, channels: $0.settings.channels)
        }
        let requests = origin.encoder.pictureRequests
        feed.begin(RealTimeStream(id: id, audio: audio, askForPicture: { requests.ask() }))
    }

    func append(video sample: EncodedSample) throws {
        try feed.publish(encoded: .video(sample))
        let encoders = origin.encoder.videos
        guard sample.rung >= topRung, sample.rung < encoders.count else { return }
        let captured = origin.timeline.captureTime(ticks: sample.pts, timescale: Timescale.video)
        guard KernelClock.monotonic() - captured < Self.staleNanoseconds else { return }
        let encoder = encoders[sample.rung]
        feed.publish(RealTimePicture(accessUnit: sample.data, captureTime: captured, isSync: sample.isSync,
                                       sps: encoder.sps, pps: encoder.pps, rung: firstRung + sample.rung, topRung: firstRung + topRung))
    }

    func append(audio sample: EncodedSample) throws {
        try feed.publish(encoded: .audio(sample))
        guard let rate = origin.encoder.audio?.settings.sampleRate else { return }
        let captured = origin.timeline.captureTime(ticks: sample.pts, timescale: Int64(rate))
        guard KernelClock.monotonic() - captured < Self.staleNanoseconds else { return }
        feed.publish(RealTimeSound(accessUnit: sample.data, captureTime: captured))
    }

    func captured(_ chunk: AudioChunk) { feed.publish(captured: chunk) }

    func discontinuity(_ change: StreamChange) throws {
        topRung = change.topRung
        try feed.publish(encoded: .change(change))
    }

    /// Returns when the complete readers are done (ENDLIST written).
    func finish(_ totals: StreamTotals) throws {
        ended = true
        defer { feed.end(stream: id) }
        try feed.finish(totals)
    }

    /// A stream given up (an encoder or a write failed) is no longer the feed's.
    deinit { if !ended { feed.end(stream: id) } }
}
