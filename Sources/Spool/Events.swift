import Logging

/// What the spool logs (Logging.Event: one constant per kind of event).
extension Event {
    public static let storageDeleted = Event("storage.deleted")
    public static let storageDeletedRecording = Event("storage.deleted_recording")
    public static let storageDeletedUnpublished = Event("storage.deleted_unpublished", console: true)
    public static let storageLow = Event("storage.low", console: true)
}
