import Logging

/// What WebRTC logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let webrtcListening = Event("webrtc.listening")
    public static let webrtcOffered = Event("webrtc.offered")
    public static let webrtcRefused = Event("webrtc.refused")
    public static let webrtcDisplaced = Event("webrtc.displaced")
    public static let webrtcConnected = Event("webrtc.connected")
    public static let webrtcEnded = Event("webrtc.ended")
}
