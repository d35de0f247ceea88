import Logging

/// What Publishing logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let journalFailed = Event("journal.failed")
    public static let playlistPublished = Event("playlist.published")
    public static let publishIndexFailed = Event("publish.index_failed", console: true)
    public static let streamPublished = Event("stream.published")
    public static let uploadOk = Event("upload.ok")
    public static let uploadRetry = Event("upload.retry")
}
