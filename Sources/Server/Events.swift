import Logging

/// What Server logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let serverMessage = Event("server.message")
}
