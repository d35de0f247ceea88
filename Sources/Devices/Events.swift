import Logging

/// What Devices logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let buttonInput = Event("button.input")
    public static let cameraLost = Event("camera.lost", console: true)
    public static let cameraReopened = Event("camera.reopened", console: true)
    /// A lost camera is there again but offers another format than the stream was begun
    /// with: said once per loss, and tried again until it comes back as it was.
    public static let cameraCameBackDifferent = Event("camera.came_back_different", console: true)
    public static let cameraTimestamps = Event("camera.timestamps")
    /// A picture the driver flagged or the decoder could not read (a cheap webcam's
    /// truncated JPEG), skipped: at most two lines a minute, the rest counted.
    public static let cameraCorrupt = Event("camera.corrupt", console: true)
    public static let previewFallback = Event("preview.fallback", console: true)
}
