import Live
import Logging
import Media

/// A consumer of one stream's encoded access units: the live HLS packager (`HLSSink`),
/// the local recording (`RecordingSink`), and whatever else wants the pictures and sound
/// as they are encoded (a real-time sender). Adding a consumer is one type of this kind,
/// handed to the stream when it starts. Called on the output's thread only, samples in
/// the order they were encoded and already on the stream's timeline.
protocol EncodedSink: AnyObject {
    /// A picture of rung `sample.rung` (the top rung is 0; a stream without a ladder has
    /// only that one).
    func append(video sample: EncodedSample) throws
    func append(audio sample: EncodedSample) throws
    /// What follows begins a new discontinuity domain: the source was interrupted, or (at
    /// a keyframe boundary, before the samples of the new domain) the frame rate or the
    /// rungs encoded changed. `change` says what the stream is now, and the frame it
    /// happened at.
    func discontinuity(_ change: StreamChange) throws
    /// The stream has ended: every sample is appended.
    func finish(_ totals: StreamTotals) throws
    /// The microphone's sound as captured, before it is encoded (for an output with an
    /// encoder of its own); most sinks take only what is encoded.
    func captured(_ chunk: AudioChunk)
}

extension EncodedSink {
    func captured(_ chunk: AudioChunk) {}
}

/// One stream of an output from its first frame to its end, as the output drives it: the
/// live HLS stream (`LiveStream`), a recording (`EncodedStream` itself).
protocol EncodingStream: AnyObject {
    func encode(_ frame: VideoFrame) throws
    func encode(_ chunk: AudioChunk) throws
    /// The thermal ladder: a new frame rate from the next segment boundary.
    func setRate(_ fps: Int)
    /// The thermal ladder: the live ladder's top rungs left out from the next segment
    /// boundary (a stream without a ladder has none to leave out).
    func setDroppedRungs(_ dropped: Int)
    func finish() throws
}

/// One stream from its first frame to its end: the output's encoders (`StreamEncoder`) and
/// the consumers of what they make. It decides what the encoders are asked for — each
/// frame, a rate or rungs change at the boundary it is due, a resync after an interrupted
/// source, silence where the microphone fell a segment behind — and hands each encoded
/// sample, moved onto the stream's timeline (`StreamOrigin`), to every sink in order.
final class EncodedStream: EncodingStream {
    let origin: StreamOrigin
    var encoder: StreamEncoder { origin.encoder }
    private(set) var sinks: [EncodedSink]
    /// The live stream marks an interrupted source with a discontinuity; the recording
    /// keeps the last picture up through the gap (a file has no discontinuities).
    private let marksDiscontinuities: Bool
    /// Sound more than this behind the pictures is made up with silence (a ladder's sound
    /// is a rendition of its own, which must not stop with the microphone); nil: never.
    private let silenceAfterTicks: Int64?

    init(origin: StreamOrigin, sinks: [EncodedSink], marksDiscontinuities: Bool, silenceAfterTicks: Int64? = nil) {
        self.origin = origin
        self.sinks = sinks
        self.marksDiscontinuities = marksDiscontinuities
        self.silenceAfterTicks = silenceAfterTicks
        if !origin.video.isEmpty { origin.encoder.startCounting(from: origin.video.count) }
    }

    /// Another consumer from the next sample on.
    func add(_ sink: EncodedSink) { sinks.append(sink) }

    /// The samples encoded before the stream began (the pre-roll), interleaved as made.
    func appendHeld(audioTimescale: Int64) throws {
        for (isVideo, sample) in origin.heldInTimeOrder(audioTimescale: audioTimescale) {
            for sink in sinks { try isVideo ? sink.append(video: sample) : sink.append(audio: sample) }
        }
    }

    var totals: StreamTotals {
        StreamTotals(framesEncoded: encoder.framesEncoded, framesSkipped: encoder.framesSkipped,
                     framesRepeated: encoder.framesRepeated, audioSilenceFilled: encoder.audioSilenceFilled,
                     keyframesRequested: encoder.keyframesRequested)
    }

    func encode(_ frame: VideoFrame) throws {
        if !marksDiscontinuities && frame.discontinuity { encoder.resync() }
        if encoder.changeDue(frame) {
            // A new frame rate starts a new discontinuity domain (HLS_RULES S17: one rate
            // per domain); so do rungs dropped or taken up (a dropped rung carries the
            // next one's pictures under its init, P9, and every rendition's
            // discontinuities stay on the same segments, V6). The timeline runs on
            // without a gap.
            let samples = try encoder.encode(frame)
            let change = StreamChange(fps: encoder.fps, topRung: encoder.topRung, format: true, frame: frame.index)
            for sink in sinks { try sink.discontinuity(change) }
            try append(video: samples)
            return
        }
        if marksDiscontinuities && frame.discontinuity && encoder.framesEncoded > 0 {
            // A discontinuity rather than a broken timeline: the segment closes and the
            // next starts at this frame with an IDR. (The encoder holds no frames back:
            // no B-frames, zero latency.)
            let change = StreamChange(fps: encoder.fps, topRung: encoder.topRung, format: false, frame: frame.index)
            for sink in sinks { try sink.discontinuity(change) }
            encoder.resync()
        }
        try append(video: try encoder.encode(frame))
        if let silenceAfterTicks, encoder.audio != nil, encoder.videoEndTicks - encoder.audioEndTicks > silenceAfterTicks {
            try append(audio: try encoder.fillSilence(upTo: encoder.videoEndTicks))
        }
    }

    func encode(_ chunk: AudioChunk) throws {
        for sink in sinks { sink.captured(chunk) }
        try append(audio: try encoder.encode(chunk))
    }

    /// The thermal ladder's new rate, from the next keyframe boundary on.
    func setRate(_ fps: Int) { encoder.setRate(fps) }

    /// The thermal ladder's rungs: the `dropped` top ones stop being encoded (or, fewer,
    /// are taken up again) from the next keyframe boundary on; one picture has none to
    /// leave out.
    func setDroppedRungs(_ dropped: Int) { encoder.setDroppedRungs(dropped) }

    /// Drains the encoders into the sinks, then lets each finish.
    func finish() throws {
        let rest = try encoder.flush()
        try append(video: rest.video)
        try append(audio: rest.audio)
        for sink in sinks { try sink.finish(totals) }
    }

    private func append(video samples: [EncodedSample]) throws {
        for sample in samples {
            let moved = origin.moved(video: sample)
            for sink in sinks { try sink.append(video: moved) }
        }
    }

    private func append(audio samples: [EncodedSample]) throws {
        for sample in samples {
            let moved = origin.moved(audio: sample)
            for sink in sinks { try sink.append(audio: moved) }
        }
    }
}
