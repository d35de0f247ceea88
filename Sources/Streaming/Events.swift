import Logging

/// What Streaming logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let captureDropped = Event("capture.dropped")
    public static let encoderReady = Event("encoder.ready")
    public static let encoderSelected = Event("encoder.selected")
    public static let encoderSkipped = Event("encoder.skipped")
    public static let performanceCalibrated = Event("performance.calibrated")
    public static let performanceCost = Event("performance.cost")
    public static let performanceLowered = Event("performance.lowered", console: true)
    public static let prerollUsed = Event("preroll.used")
    public static let recordCodec = Event("record.codec", console: true)
    public static let recordingEnded = Event("recording.ended", console: true)
    public static let recordingPaused = Event("recording.paused", console: true)
    public static let recordingReserveOff = Event("recording.reserve_off", console: true)
    public static let recordingResumed = Event("recording.resumed", console: true)
    public static let recordingStarted = Event("recording.started")
    public static let segmentStored = Event("segment.stored")
    public static let sessionFailed = Event("session.failed", console: true)
    public static let streamDiscontinuity = Event("stream.discontinuity")
    public static let streamEnded = Event("stream.ended", console: true)
    public static let streamRate = Event("stream.rate")
    /// The rungs of a ladder encoded from here on, and those the heat dropped.
    public static let streamRungs = Event("stream.rungs", console: true)
    public static let streamStarted = Event("stream.started", console: true)
    /// What the frame's path before the outputs logs: the preview, snapshots, the startup gate.
    public static let cameraFirstFrame = Event("camera.first_frame")
    public static let previewFirstFrame = Event("preview.first_frame")
    public static let previewNone = Event("preview.none")
    public static let previewOpened = Event("preview.opened")
    public static let snapshotFailed = Event("snapshot.failed")
    public static let startupBuffer = Event("startup.buffer")
}
