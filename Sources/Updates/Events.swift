import Logging

/// What the update code logs.
extension Event {
    /// The root slot onair runs from (A/B images): its version, and whether it is an
    /// update's first boot (trial), confirmed, or where an update fell back to, and why.
    public static let updateSlot = Event("update.slot", console: true)
    public static let updateConfirmed = Event("update.confirmed", console: true)
    public static let updateConfirmFailed = Event("update.confirm_failed", console: true)
    /// An install of a bundle (from `onair update` or `POST /api/update`): begun, its
    /// progress, its end, and the reboot into the new slot.
    public static let updateInstalling = Event("update.installing", console: true)
    public static let updateProgress = Event("update.progress", console: true)
    public static let updateInstalled = Event("update.installed", console: true)
    public static let updateInstallFailed = Event("update.install_failed", console: true)
    public static let updateRebooting = Event("update.rebooting", console: true)
}
