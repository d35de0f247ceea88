import Codecs
import Devices
import HLS
import Media
import Publishing

/// The recording state machine on the media thread: armed ⇄ recording → finishing →
/// armed. Capture threads feed `queue`; control calls (`toggle`, `startRecording`,
/// `stopRecording`) are picked up by the media thread at its next item, so stream state
/// has exactly one owner.
public final class Session: @unchecked Sendable {
    public enum State: String, Sendable { case armed, recording, finishing, stopped }
    enum Command { case start, stop, toggle }

    public let settings: Settings
    public let queue: MediaQueue
    private let log: Log
    private let lock = NSLockish()
    private var commands: [Command] = []
    private var thread: ThreadHandle?
    private var stateValue: State = .armed
    private var failure: Error?
    private var onIdle: (@Sendable (Session) -> Void)?

    // Media-thread state.
    private var stream: LiveStream?
    private var recordingRequested = false
    private var encoderKind: VideoEncoderKind?
    private var encoderDevice: String?
    private var finishingFrames = 0
    public private(set) var streamsEnded = 0

    /// Told of everything a stream writes, once it is on disk (the publisher).
    private let observer: @Sendable (StreamEvent) -> Void

    public init(settings: Settings, log: Log, observer: @escaping @Sendable (StreamEvent) -> Void = { _ in }) {
        self.settings = settings
        self.log = log
        self.observer = observer
        // In real time about 200 ms of video and a second of 20 ms audio chunks: enough to
        // ride out an encoder hiccup, small enough for a board's memory (6 × 1.4 MB at 720p).
        // With --pace fast the producer waits instead of dropping, so two frames of lead
        // keep the encoder busy without holding more pictures than it needs.
        queue = settings.pace == .fast
            ? MediaQueue(videoCapacity: 2, audioCapacity: 50, policy: .block)
            : MediaQueue(videoCapacity: max(2, settings.fps / 5), audioCapacity: 50, policy: .dropOldest)
    }

    public var state: State { lock.withLock { stateValue } }
    /// The id of the stream being recorded, if any.
    public var currentStream: String? { lock.withLock { currentStreamID } }
    private var currentStreamID: String?
    public var error: Error? { lock.withLock { failure } }

    /// Runs the media thread. `onIdle` is called on it whenever a stream has ended
    /// (duration reached or stop requested) or the session failed.
    public func start(onIdle: @escaping @Sendable (Session) -> Void) {
        self.onIdle = onIdle
        thread = ThreadHandle(name: "onair-media") { [self] in run() }
    }

    public func startRecording() { post(.start) }
    public func stopRecording() { post(.stop) }
    public func toggle() { post(.toggle) }

    /// Finishes any stream in progress with what has been captured, then ends the thread.
    public func shutdown() {
        queue.close()
        thread?.join()
        thread = nil
    }

    private func post(_ command: Command) { lock.withLock { commands.append(command) } }
    private func set(_ state: State) { lock.withLock { stateValue = state } }

    private func run() {
        while let item = queue.pop() {
            for command in lock.withLock({ () -> [Command] in defer { commands = [] }; return commands }) {
                apply(command)
            }
            do {
                try handle(item)
            } catch {
                fail(error)
                return
            }
        }
        // Queue closed: finish what is open.
        do { try finishStream() } catch { fail(error); return }
        set(.stopped)
    }

    private func apply(_ command: Command) {
        switch command {
        case .start: recordingRequested = true
        case .stop: recordingRequested = false
        case .toggle: recordingRequested = !(recordingRequested)
        }
        if recordingRequested && state == .armed { set(.recording) }
        if !recordingRequested && state == .recording {
            if stream == nil { set(.armed) } else { set(.finishing); finishingFrames = 0 }
        }
    }

    private func handle(_ item: MediaQueue.Item) throws {
        switch item {
        case .video(let frame):
            switch state {
            case .recording:
                if let stream {
                    try stream.encode(frame)
                    if let limit = settings.durationMilliseconds, stream.videoEndTicks >= Int64(limit) * 90 {
                        recordingRequested = false
                        set(.finishing)
                        finishingFrames = 0
                    }
                } else {
                    try begin(with: frame)
                }
            case .finishing:
                // Let the audio catch up with the last frame, but not for long.
                finishingFrames += 1
                if finishingFrames > 5 || stream.map({ $0.audioEndTicks >= $0.videoEndTicks }) ?? true { try finishStream() }
            case .armed, .stopped:
                break
            }
        case .audio(let chunk):
            guard let stream, state == .recording || state == .finishing else { return }
            try stream.encode(chunk)
            if state == .finishing && stream.audioEndTicks >= stream.videoEndTicks { try finishStream() }
        }
    }

    private func begin(with frame: VideoFrame) throws {
        let size = settings.encodedSize
        let videoSettings = VideoEncoderSettings(width: size.width, height: size.height, fps: settings.fps,
                                                 bitrate: settings.videoBitrate, keyframeInterval: settings.keyframeInterval)
        let video: H264Encoder
        if let kind = encoderKind {
            video = try H264Encoder(kind: kind, settings: videoSettings, device: encoderDevice)
        } else {
            video = try H264Encoder.select(settings.encoder, settings: videoSettings) { kind, note in
                if note != "selected" { log("encoder.skipped", ("encoder", kind.rawValue), ("reason", note)) }
            }
            encoderKind = video.kind
            encoderDevice = video.device
            log("encoder.selected", ("encoder", video.kind.rawValue), ("codec", video.codecName),
                ("requested", settings.encoder.rawValue), ("width", size.width), ("height", size.height),
                ("fps", settings.fps), ("bitrate", settings.videoBitrate))
        }
        let audio = settings.audioEnabled
            ? try AACEncoder(settings: .init(sampleRate: settings.sampleRate, channels: settings.channels, bitrate: settings.audioBitrate))
            : nil
        // PROGRAM-DATE-TIME is the wall clock at capture: step back over the time the
        // frame spent in the queue (with --pace fast, frames run ahead of the clock).
        let waited = max(0, MonotonicClock().now() - frame.captureTime)
        let live = try LiveStream(firstFrame: frame, wallClockMs: wallClockMilliseconds() - waited / 1_000_000, settings: settings,
                                  video: video, audio: audio, log: log, observer: observer)
        stream = live
        lock.withLock { currentStreamID = live.id }
        log("stream.started", ("id", live.id), ("dir", live.writer.directory),
            ("target_duration", settings.targetDuration), ("priming", audio?.priming ?? 0))
    }

    private func finishStream() throws {
        guard let stream else {
            if state == .finishing { set(.armed) }
            return
        }
        self.stream = nil
        lock.withLock { currentStreamID = nil }
        try stream.finish()
        streamsEnded += 1
        let dropped = queue.dropped
        if dropped.video + dropped.audio > 0 {
            log("capture.dropped", level: .warn, ("video_frames", dropped.video), ("audio_chunks", dropped.audio))
        }
        if state != .stopped { set(recordingRequested ? .recording : .armed) }
        onIdle?(self)
    }

    private func fail(_ error: Error) {
        log("session.failed", level: .error, ("error", "\(error)"))
        lock.withLock { failure = error; stateValue = .stopped }
        stream = nil
        onIdle?(self)
        // Keep draining so producers never block on a dead consumer.
        while queue.pop() != nil {}
    }
}
