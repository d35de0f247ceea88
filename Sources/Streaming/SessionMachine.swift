import Media

/// The session's decisions, pure: which captured frames and sound make up a stream, when
/// it begins and when it ends. Events in (a control command, a picture or a chunk of sound
/// with its capture time, the capture closing), actions out; time is the capture times it
/// is given. `Session` is the thread around it that carries the actions out.
///
/// armed ⇄ recording → finishing → armed; stopped once the capture has closed.
struct SessionMachine {
    enum Command: Equatable { case start, stop, toggle, rate(Int), droppedRungs(Int) }

    enum Input: Equatable {
        case command(Command)
        /// A picture captured at `captureTime` (CLOCK_MONOTONIC ns).
        case video(captureTime: Int64)
        /// Sound from `captureTime` to `endTime`.
        case audio(captureTime: Int64, endTime: Int64)
        /// The capture has ended: finish what is open.
        case closed
    }

    enum Action: Equatable {
        /// A stream begins at this picture (then it is forwarded).
        case begin
        /// Hand the item in to every output.
        case forward
        /// The stream ends here.
        case finish
        /// The outputs change to this frame rate at their next segment boundary.
        case rate(Int)
        /// The live ladder leaves out this many top rungs from its next segment boundary.
        case droppedRungs(Int)
    }

    private(set) var state: Session.State = .armed
    /// The capture's frame rate: the grid the stream's length is counted on.
    let fps: Int
    let durationMilliseconds: Int?
    let hasAudio: Bool
    /// While armed the outputs' encoders run for their pre-roll.
    let preroll: Bool

    private var requested = false
    /// The capture time of the stream's first picture, while a stream is open.
    private(set) var origin: Int64?
    private var lastSlot: Int64 = -1
    private var audioEnd: Int64 = 0  // ns from `origin`
    private var finishingFrames = 0
    /// Pictures a finishing stream waits for the sound to catch up, at most.
    static let finishingWait = 5

    init(fps: Int, durationMilliseconds: Int?, hasAudio: Bool, preroll: Bool) {
        self.fps = fps
        self.durationMilliseconds = durationMilliseconds
        self.hasAudio = hasAudio
        self.preroll = preroll
    }

    mutating func handle(_ input: Input) -> [Action] {
        switch input {
        case .command(let command): return apply(command)
        case .video(let time): return video(at: time)
        case .audio(let time, let end): return audio(from: time, to: end)
        case .closed:
            let actions = finish()
            state = .stopped
            return actions
        }
    }

    /// Media time the stream's video covers, 90 kHz ticks (the grid the outputs encode on).
    var videoEndTicks: Int64 { rescale(lastSlot + 1, from: Int64(fps), to: Timescale.video) }
    var audioEndTicks: Int64 { rescale(audioEnd, from: Timescale.nanoseconds, to: Timescale.video) }

    private mutating func apply(_ command: Command) -> [Action] {
        guard state != .stopped else { return [] }
        switch command {
        case .start: requested = true
        case .stop: requested = false
        case .toggle: requested.toggle()
        case .rate(let fps): return [.rate(fps)]
        case .droppedRungs(let dropped): return [.droppedRungs(dropped)]
        }
        if requested && state == .armed { state = .recording }
        if !requested && state == .recording {
            if origin == nil { state = .armed } else { state = .finishing; finishingFrames = 0 }
        }
        return []
    }

    private mutating func video(at time: Int64) -> [Action] {
        switch state {
        case .recording:
            var actions: [Action] = []
            if origin == nil {
                origin = time
                lastSlot = -1
                audioEnd = 0
                actions.append(.begin)
            }
            actions.append(.forward)
            lastSlot = max(lastSlot, StreamEncoder.slot(captureTime: time, origin: origin!, fps: fps))
            if let limit = durationMilliseconds, videoEndTicks >= Int64(limit) * 90 {
                requested = false
                state = .finishing
                finishingFrames = 0
            }
            return actions
        case .finishing:
            // Let the sound catch up with the last picture, but not for long.
            finishingFrames += 1
            return finishingFrames > Self.finishingWait || !hasAudio || audioEndTicks >= videoEndTicks ? finish() : []
        case .armed:
            return preroll ? [.forward] : []
        case .stopped:
            return []
        }
    }

    private mutating func audio(from time: Int64, to end: Int64) -> [Action] {
        guard let origin else {
            // Pre-roll: sound goes on into the outputs' rings until a stream begins.
            return preroll && (state == .armed || state == .recording) ? [.forward] : []
        }
        guard state == .recording || state == .finishing else { return [] }
        audioEnd = max(audioEnd, end - origin)
        if state == .finishing && audioEndTicks >= videoEndTicks { return [.forward] + finish() }
        return [.forward]
    }

    private mutating func finish() -> [Action] {
        guard origin != nil else {
            if state == .finishing { state = .armed }
            return []
        }
        origin = nil
        if state != .stopped { state = requested ? .recording : .armed }
        return [.finish]
    }
}
