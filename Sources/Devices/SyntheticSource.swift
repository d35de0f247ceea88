import Media
import Threading

/// Where captured media goes: the pipeline's input. Called from capture threads.
public protocol CaptureSink: AnyObject, Sendable {
    func capture(_ frame: VideoFrame)
    func capture(_ chunk: AudioChunk)
}

public enum Pace: String, Sendable {
    /// Paced by CLOCK_MONOTONIC, like a real camera.
    case realtime
    /// As fast as the pipeline takes frames; timestamps stay nominal.
    case fast
}

/// The synthetic camera and microphone, driven by one clock so their timestamps share an
/// origin: video frame i at i/fps, audio sample n at n/rate, both from the source start.
/// One thread delivers both in time order (video when captured, audio when its 20 ms
/// chunk is complete), which is also what makes `--pace fast` deterministic.
public final class SyntheticSource: Sendable {
    public let pattern: SyntheticPattern
    public let tone: SyntheticTone?
    public let pace: Pace
    public let clock: MediaClock
    private let chunkFrames: Int
    private let thread = StoppableThread()

    public init(width: Int, height: Int, fps: Int, audio: (sampleRate: Int, channels: Int)?, pace: Pace, clock: MediaClock = MonotonicClock()) {
        pattern = SyntheticPattern(width: width, height: height, fps: fps)
        tone = audio.map { SyntheticTone(sampleRate: $0.sampleRate, channels: $0.channels) }
        chunkFrames = (audio?.sampleRate ?? 48_000) / 50
        self.pace = pace
        self.clock = clock
    }

    /// Starts delivering to `sink`; returns the source start time (monotonic ns).
    @discardableResult
    public func start(into sink: CaptureSink) -> Int64 {
        let origin = clock.now()
        thread.start(name: "onair-synthetic") { [self] in run(origin: origin, sink: sink) }
        return origin
    }

    public func stop() { thread.stop() }

    private var isStopped: Bool { thread.isStopped }

    private func run(origin: Int64, sink: CaptureSink) {
        var frameIndex: Int64 = 0
        var sampleIndex: Int64 = 0
        while !isStopped {
            let videoDue = origin + pattern.offset(of: frameIndex)
            let audioDue = tone.map { origin + rescale(sampleIndex + Int64(chunkFrames), from: Int64($0.sampleRate), to: Timescale.nanoseconds) }
            if let tone, let audioDue, audioDue <= videoDue {
                if pace == .realtime { clock.sleep(until: audioDue) }
                let capture = origin + rescale(sampleIndex, from: Int64(tone.sampleRate), to: Timescale.nanoseconds)
                sink.capture(AudioChunk(samples: tone.samples(from: sampleIndex, count: chunkFrames),
                                        channels: tone.channels, sampleRate: tone.sampleRate, captureTime: capture))
                sampleIndex += Int64(chunkFrames)
            } else {
                if pace == .realtime { clock.sleep(until: videoDue) }
                sink.capture(pattern.frame(index: frameIndex, captureTime: videoDue))
                frameIndex += 1
            }
        }
    }
}
