import Logging

/// What Devices logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let buttonInput = Event("button.input")
    public static let cameraLost = Event("camera.lost", console: true)
    public static let cameraReopened = Event("camera.reopened", console: true)
    public static let cameraTimestamps = Event("camera.timestamps")
    public static let previewFallback = Event("preview.fallback", console: true)
}
