import Logging

/// What Recording logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let recordingEmpty = Event("recording.empty")
    public static let recordingExpireFailed = Event("recording.expire_failed")
    public static let recordingExpired = Event("recording.expired")
    public static let recordingRecovered = Event("recording.recovered", console: true)
    public static let recordingUnrecoverable = Event("recording.unrecoverable")
    public static let recoverySkipped = Event("recovery.skipped", console: true)
}
