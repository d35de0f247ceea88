import Basics
import Codecs
import Devices
import Files
import HLS
import Live
import Logging
import Media
import Spool
import Threading

/// The session thread around `SessionMachine` (armed ⇄ recording → finishing → armed):
/// capture threads feed `queue`; control calls (`toggle`, `startRecording`,
/// `stopRecording`) are picked up at the next item, so stream state has exactly one owner.
/// One capture feeds every use: the session decides which frames make up a stream and
/// hands the same ones to each output (live HLS, the recording), each on its own thread.
public final class Session: Sendable {
    public enum State: String, Sendable { case armed, recording, finishing, stopped }
    typealias Command = SessionMachine.Command

    public let profile: SessionProfile
    public let queue: MediaQueue
    private let log: Log

    /// What the session thread and its callers share. The decisions (`SessionMachine`)
    /// are the session thread's alone.
    private struct Shared {
        var commands: [Command] = []
        var thread: WorkerThread?
        var state: State = .armed
        var failure: Error?
        var onIdle: (@Sendable (Session) -> Void)?
        var workers: [OutputWorker] = []
        var currentStream: String?
        var streamsEnded = 0
        var framesSent = 0
        var droppedRungs = 0
        var rate: Int?
    }
    private let shared = Locked(Shared())
    /// The machine the session thread starts from.
    private let machine: SessionMachine

    /// Told of everything a stream writes, once it is on disk (the publisher).
    private let observer: @Sendable (StreamEvent) -> Void

    /// Frees space when a write finds the disk full (the storage keeper), sparing the
    /// stream being recorded; true if it did.
    private let makeRoom: @Sendable (_ recording: String?) -> Bool

    /// The wall clock and whether it can be trusted: what dates a stream, if anything.
    private let clock: any WallClock
    private let names: StreamNames
    /// The live stream's parts, for the built-in server's low-latency playlist.
    private let liveEdge: LiveEdge?
    /// Where the live stream is published as it is encoded, for the outputs that read it
    /// (WebRTC, RTSP).
    private let feed: LiveFeed?

    public init(profile: SessionProfile, log: Log, clock: any WallClock = SystemWallClock(), liveEdge: LiveEdge? = nil,
                feed: LiveFeed? = nil, makeRoom: @escaping @Sendable (_ recording: String?) -> Bool = { _ in false },
                observer: @escaping @Sendable (StreamEvent) -> Void = { _ in }) {
        self.makeRoom = makeRoom
        self.liveEdge = liveEdge
        self.feed = feed
        self.clock = clock
        names = StreamNames(root: profile.dataDirectory, device: profile.device)
        self.profile = profile
        machine = SessionMachine(fps: profile.fps, durationMilliseconds: profile.durationMilliseconds, hasAudio: profile.audioEnabled,
                                 preroll: profile.prerollSeconds > 0)
        self.log = log
        self.observer = observer
        // In real time about 200 ms of video and a second of 20 ms audio chunks: enough to
        // ride out a hiccup, small enough for a board's memory (6 × 1.4 MB at 720p). With
        // --pace fast the producer waits instead of dropping, so two frames of lead keep
        // the encoders busy without holding more pictures than they need.
        queue = Self.makeQueue(profile, seconds: 0.2)
    }

    static func makeQueue(_ profile: SessionProfile, seconds: Double) -> MediaQueue {
        profile.waitsForEncoders
            ? MediaQueue(videoCapacity: 2, audioCapacity: 50, policy: .block)
            : MediaQueue(videoCapacity: max(2, Int(Double(profile.fps) * seconds)), audioCapacity: 50, policy: .dropOldest)
    }

    public var state: State { shared.withLock { $0.state } }
    /// The id of the stream being recorded, if any.
    public var currentStream: String? { shared.withLock { $0.currentStream } }
    public var error: Error? { shared.withLock { $0.failure } }

    /// Pictures and sound chunks dropped because a thread fell behind: at the session's
    /// own queue and at each output's.
    public var dropped: (video: Int, audio: Int) {
        ([queue] + shared.withLock { $0.workers }.map(\.queue)).reduce((0, 0)) { total, queue in
            let d = queue.dropped
            return (total.0 + d.video, total.1 + d.audio)
        }
    }

    /// Opens every output's encoders (`encoder.ready`: from now on a start costs nothing),
    /// then starts the outputs' threads and the session thread. `onIdle` is called
    /// whenever a stream has ended (duration reached or stop requested) or the session
    /// failed.
    public func start(onIdle: @escaping @Sendable (Session) -> Void) throws {
        shared.withLock { $0.onIdle = onIdle }
        var outputs = try prepareOutputs(live: profile.live, recording: profile.recording)
        // The talk's sustained-performance rule: know the cost before starting.
        let encodings = outputs.flatMap { $0.0.encodings }
        let cost = EncodingCost(outputs: encodings, capacity: capacities(encodings))
        log(.performanceCost, ("cost", (cost.value * 100).rounded() / 100),
            ("outputs", cost.outputs.map(\.description).joined(separator: "; ")))
        if cost.value > 1 {
            let lowered = profile.performance.overload == .lower ? cost.lowered() : nil
            guard let lowered else {
                // The rung the lowering would drop first is the one to name.
                let rung = profile.live.lowerRungs.isEmpty ? nil
                    : Rung(width: profile.live.output.video.width, height: profile.live.output.video.height, bitrate: profile.live.output.video.bitrate)
                throw SessionError.overloaded(
                    cost: cost.value, outputs: cost.outputs.map(\.description).joined(separator: " + "),
                    advice: (rung.map { "drop the top rung \($0) from video.ladder, or " } ?? "") + "lower "
                        + (profile.recording != nil ? "the recording (record.width/height, record.fps, or record.enabled=off) or " : "")
                        + "the live stream (video.quality, video.fps), or set performance.overload=lower")
            }
            var live = profile.live, recording = profile.recording
            if let r = lowered.outputs.first(where: { $0.name == "recording" }), let video = recording?.output.video,
               r.width * r.height < video.width * video.height {
                recording?.output.video.width = live.output.video.width
                recording?.output.video.height = live.output.video.height
            }
            for _ in 0..<lowered.droppedRungs { live = live.withoutTopRung() }
            if let l = lowered.outputs.first(where: { $0.name == "live" }) { live = live.at(fps: l.fps) }
            outputs = try prepareOutputs(live: live, recording: recording)
            log(.performanceLowered, level: .warn, ("changes", lowered.changes.joined(separator: ", ")),
                ("cost", (EncodingCost(outputs: lowered.outputs, capacity: cost.capacity).value * 100).rounded() / 100))
        }
        log(.encoderReady, ("outputs", outputs.map(\.0.name).joined(separator: ",")))
        let failed: @Sendable (String, Error) -> Void = { [weak self] name, error in self?.fail(error, output: name) }
        let started = outputs.map { OutputWorker($0.0, queue: Self.makeQueue(profile, seconds: $0.seconds), failed: failed) }
        // The workers first: the session thread takes them as it starts.
        shared.withLock { $0.workers = started }
        let thread = WorkerThread(name: "onair-session") { [self, machine] in run(machine, workers: started) }
        shared.withLock { $0.thread = thread }
    }

    /// The outputs, their encoders opened.
    private func prepareOutputs(live: LiveProfile, recording: RecordingProfile?) throws -> [(StreamOutput, seconds: Double)] {
        let preroll = profile.prerollSeconds
        let makeRoom: SpaceRetry.MakeRoom = { [weak self, makeRoom] in makeRoom(self?.currentStream) }
        var outputs: [(StreamOutput, seconds: Double)] = [
            (EncodingOutput.live(live, prerollSeconds: preroll, log: log, makeRoom: makeRoom, edge: liveEdge, feed: feed,
                                 observer: observer), 0.2)]
        // The recording gets the deeper queue: it must keep every frame it can.
        if let recording {
            outputs.append((EncodingOutput.recording(recording, prerollSeconds: preroll, log: log, makeRoom: makeRoom), 0.5))
        }
        for (output, _) in outputs { try output.prepare() }
        return outputs
    }

    /// Each encoder kind's capacity: the configured one (the board profile), else the
    /// hardware's published limit, else (x264) measured on this CPU.
    private func capacities(_ outputs: [EncodingCost.Output]) -> [VideoEncoderKind: Double] {
        var table = PerformanceSettings.hardwareDefaults.merging(profile.performance.capacity) { $1 }
        if outputs.contains(where: { $0.kind == .x264 }) && table[.x264] == nil {
            table[.x264] = X264Calibration.capacity(dataDirectory: profile.dataDirectory, log: log)
        }
        return table
    }

    public func startRecording() { post(.start) }
    public func stopRecording() { post(.stop) }
    public func toggle() { post(.toggle) }
    /// The thermal ladder's frame rate; the outputs change at their next segment boundary.
    public func setRate(_ fps: Int) {
        shared.withLock { $0.rate = fps }
        post(.rate(fps))
    }

    /// The thermal ladder's rungs: the live stream leaves out its `dropped` top rungs (the
    /// rungs below carry on, and the dropped ones carry their pictures) from its next
    /// segment boundary.
    public func setDroppedRungs(_ dropped: Int) {
        shared.withLock { $0.droppedRungs = dropped }
        post(.droppedRungs(dropped))
    }

    /// How many of the live ladder's top rungs the thermal ladder leaves out now.
    public var droppedRungs: Int { shared.withLock { $0.droppedRungs } }

    /// The frame rate streams are made at now: the configured one, or the thermal ladder's.
    public var rate: Int { shared.withLock { $0.rate } ?? profile.live.fps }

    /// Finishes any stream in progress with what has been captured, lets every output
    /// write it out, then ends the threads.
    public func shutdown() {
        queue.close()
        let (thread, workers) = shared.withLock { state in
            defer { state.thread = nil }
            return (state.thread, state.workers)
        }
        thread?.join()
        for worker in workers { worker.stop() }
    }

    private func post(_ command: Command) { shared.withLock { $0.commands.append(command) } }

    /// The session thread: each item through the machine, the commands posted before it
    /// first.
    private func run(_ start: SessionMachine, workers: [OutputWorker]) {
        var machine = start
        // A held item (the start-up backlog) goes on held: the outputs' queues wait for
        // room rather than drop it, as this one did.
        while let (item, held) = queue.popHeld() {
            if error != nil { continue }  // keep draining so producers never block
            for command in shared.withLock({ state -> [Command] in defer { state.commands = [] }; return state.commands }) {
                carryOut(machine.handle(.command(command)), item: item, held: held, machine: machine, workers: workers)
            }
            switch item {
            case .video(let frame):
                carryOut(machine.handle(.video(captureTime: frame.captureTime)), item: item, held: held, machine: machine, workers: workers)
            case .audio(let chunk):
                let end = chunk.captureTime + rescale(Int64(chunk.frameCount), from: Int64(chunk.sampleRate), to: Timescale.nanoseconds)
                carryOut(machine.handle(.audio(captureTime: chunk.captureTime, endTime: end)), item: item, held: held, machine: machine, workers: workers)
            case .begin, .finish, .rate, .droppedRungs:
                break
            }
        }
        // Queue closed: finish what is open.
        carryOut(machine.handle(.closed), item: nil, held: false, machine: machine, workers: workers)
    }

    private func send(_ item: MediaQueue.Item, held: Bool = false, machine: SessionMachine, workers: [OutputWorker]) {
        if case .video = item, machine.origin != nil { shared.withLock { $0.framesSent += 1 } }
        for worker in workers { worker.queue.push(item, held: held) }
    }

    /// Frames handed to the outputs as part of a stream.
    public var framesIn: Int { shared.withLock { $0.framesSent } }
    /// Streams ended in this run.
    public var streamsEnded: Int { shared.withLock { $0.streamsEnded } }

    /// What the machine decided, done: its state published, the outputs told.
    private func carryOut(_ actions: [SessionMachine.Action], item: MediaQueue.Item?, held: Bool, machine: SessionMachine,
                          workers: [OutputWorker]) {
        let send = { (item: MediaQueue.Item) in self.send(item, machine: machine, workers: workers) }
        shared.withLock { if $0.failure == nil { $0.state = machine.state } }
        for action in actions {
            switch action {
            case .begin:
                guard case .video(let frame)? = item else { continue }
                let dating = StreamDating(clock: clock)
                let start = StreamStart(id: names.next(dating: dating, firstCapture: frame.captureTime), dating: dating)
                shared.withLock { $0.currentStream = start.id }
                send(.begin(start))
            case .forward:
                if let item { self.send(item, held: held, machine: machine, workers: workers) }
            case .rate(let fps):
                send(.rate(fps))
            case .droppedRungs(let dropped):
                send(.droppedRungs(dropped))
            case .finish:
                shared.withLock { state in
                    state.currentStream = nil
                    state.streamsEnded += 1
                }
                send(.finish)
                let dropped = self.dropped
                if dropped.video + dropped.audio > 0 {
                    log(.captureDropped, level: .warn, ("video_frames", dropped.video), ("audio_chunks", dropped.audio))
                }
                shared.withLock { $0.onIdle }?(self)
            }
        }
    }

    private func fail(_ error: Error, output: String) {
        log(.sessionFailed, level: .error, ("output", output), ("error", "\(error)"))
        let onIdle = shared.withLock { state in
            if state.failure == nil { state.failure = error }
            state.state = .stopped
            return state.onIdle
        }
        onIdle?(self)
    }
}

/// Why a session does not start.
public enum SessionError: Error, CustomStringConvertible {
    /// The encoders would be asked for more than they sustain (the cost, and what to change).
    case overloaded(cost: Double, outputs: String, advice: String)

    public var description: String {
        switch self {
        case .overloaded(let cost, let outputs, let advice):
            return "encoding would cost \(cost.fixed(2)) of what the encoders sustain (\(outputs)); \(advice)"
        }
    }
}
