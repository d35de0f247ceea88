import Logging

/// What the live feed logs.
extension Event {
    /// The Opus encoder would not open: readers that want Opus (WebRTC) get no sound.
    public static let opusFailed = Event("webrtc.no_sound")
}
