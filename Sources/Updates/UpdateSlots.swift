import Basics
import Files
import HTTP
import Logging
import System
import Threading

/// The root slot onair runs from, as the boot loader sees the slots: on EFI boards the
/// entries image/rootfs/onair-slot-efi keeps on the EFI system partition
/// (`onair-GEN-SLOT[+LEFT[-DONE]].conf`, systemd-boot's boot counting); on the Raspberry
/// Pi's, the firmware's autoboot.txt and the try's state beside it (onair-slot-rpi).
public struct BootSlots: Equatable, Sendable {
    /// "A" or "B": the kernel's `rauc.slot=`.
    var booted: String
    /// An update's first boot, not yet confirmed.
    var trial: Bool
    /// An update to the other slot fell back here.
    var rolledBack: Bool

    static let entriesFolder = "/boot/firmware/loader/entries"
    static let autoboot = "/boot/firmware/autoboot.txt"
    static let tryFile = "/boot/firmware/onair-trial"

    /// The slots of this board, nil off an A/B image.
    public static func current() -> BootSlots? {
        guard FileSystem.exists(Update.systemConfiguration), let line = FileSystem.readText("/proc/cmdline", limit: 4096) else { return nil }
        if let autoboot = FileSystem.readText(autoboot, limit: 4096) {
            return parse(commandLine: line, autoboot: autoboot, try: FileSystem.readText(tryFile, limit: 256) ?? "")
        }
        guard let names = FileSystem.names(in: entriesFolder) else { return nil }
        return parse(commandLine: line, entries: names)
    }

    static func bootedSlot(_ commandLine: String) -> String? {
        let booted = commandLine.split(whereSeparator: { $0 == " " || $0 == "\n" }).first(where: { $0.hasPrefix("rauc.slot=") })
            .map { String($0.dropFirst("rauc.slot=".count)) }
        return booted.flatMap { ["A", "B"].contains($0) ? $0 : nil }
    }

    static func parse(commandLine: String, entries: [String]) -> BootSlots? {
        guard let booted = bootedSlot(commandLine) else { return nil }
        let parsed = entries.compactMap(Entry.init)
        guard let mine = parsed.first(where: { $0.slot == booted }) else { return nil }
        let other = parsed.first { $0.slot != booted }
        return BootSlots(booted: booted, trial: mine.triesLeft != nil,
                         rolledBack: other.map { $0.generation > mine.generation && $0.triesLeft == 0 } ?? false)
    }

    /// The Raspberry Pi's slots: autoboot.txt's `[all]` `boot_partition` is the committed
    /// slot (2: A, 3: B); the try's file says "SLOT installed|trying|bad". The booted slot
    /// is on trial when it is the one trying and not the committed one; the other slot
    /// trying (a reset during its try brought the firmware back here) or given up means
    /// an update fell back.
    static func parse(commandLine: String, autoboot: String, try state: String) -> BootSlots? {
        guard let booted = bootedSlot(commandLine), let committed = committedSlot(autoboot) else { return nil }
        let words = state.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard words.count == 2, ["A", "B"].contains(words[0]) else {
            return BootSlots(booted: booted, trial: false, rolledBack: false)
        }
        let (slot, word) = (words[0], words[1])
        return BootSlots(booted: booted, trial: slot == booted && word == "trying" && booted != committed,
                         rolledBack: slot != booted && (word == "trying" || word == "bad"))
    }

    /// The slot autoboot.txt's `[all]` section boots, nil when it names neither.
    static func committedSlot(_ autoboot: String) -> String? {
        var section = "all", partition: String?
        for raw in autoboot.split(separator: "\n") {
            let line = raw.trimmingWhitespace()
            if line.hasPrefix("[") { section = String(line.dropFirst().prefix { $0 != "]" }); continue }
            if section == "all", line.hasPrefix("boot_partition=") { partition = String(line.dropFirst("boot_partition=".count)) }
        }
        switch partition { case "2": return "A"; case "3": return "B"; default: return nil }
    }

    /// One entry's name: `onair-12-b+0-1.conf` → generation 12, slot B, 0 tries left.
    struct Entry: Equatable {
        var generation: Int
        var slot: String
        var triesLeft: Int?

        init(generation: Int, slot: String, triesLeft: Int?) {
            (self.generation, self.slot, self.triesLeft) = (generation, slot, triesLeft)
        }

        init?(_ name: String) {
            guard name.hasPrefix("onair-"), name.hasSuffix(".conf") else { return nil }
            let stem = name.dropFirst("onair-".count).dropLast(".conf".count)
            let parts = stem.split(separator: "-", maxSplits: 1)
            // At most 9 digits: a generation or count from a file name cannot overflow.
            guard parts.count == 2, (1...9).contains(parts[0].count), parts[0].allSatisfy(\.isASCIIDigitish),
                  let generation = Int(parts[0]) else { return nil }
            let rest = parts[1]
            guard let letter = rest.first, letter == "a" || letter == "b" else { return nil }
            slot = letter == "a" ? "A" : "B"
            self.generation = generation
            let counter = rest.dropFirst()
            if counter.isEmpty { triesLeft = nil; return }
            guard counter.first == "+" else { return nil }
            let left = counter.dropFirst().prefix { $0 != "-" }
            guard (1...9).contains(left.count), left.allSatisfy(\.isASCIIDigitish), let tries = Int(left) else { return nil }
            triesLeft = tries
        }
    }
}

/// What /api/status and the console say of the slots.
public struct UpdateStatus: Equatable, Sendable {
    public var slot: String
    public var version: String?
    public var state: String
    public var reason: String?

    /// Why the last update fell back, written by onair-update-deadline (or nil: the slot
    /// never came up far enough to say).
    static let reasonFile = "rollback-reason"

    init(_ slots: BootSlots, version: String?, reason: String?) {
        slot = slots.booted
        self.version = version
        state = slots.trial ? "trial" : slots.rolledBack ? "rolled_back" : "confirmed"
        self.reason = slots.rolledBack ? (reason ?? "the new slot did not come up (it failed to boot, or stopped before onair confirmed it)") : nil
    }
}

/// The slot onair runs from, said once on the console (`update.slot`) and kept for
/// /api/status; on an update's first boot, its confirmation.
public final class SlotWatch: Sendable {
    public let status: Locked<UpdateStatus>
    private let confirmation: SlotConfirmation?

    public init(_ slots: BootSlots, dataDirectory: String, confirmSeconds: Int, healthy: @escaping @Sendable () -> Bool, log: Log) {
        let version = ImageManifest.fields(FileSystem.readText(ImageManifest.path, limit: 4096) ?? "")["version"]
        let reasonPath = dataDirectory + "/update/" + UpdateStatus.reasonFile
        let reason = FileSystem.readText(reasonPath, limit: 4096)?.trimmingWhitespace()
        let status = UpdateStatus(slots, version: version, reason: reason.flatMap { $0.isEmpty ? nil : $0 })
        log(.updateSlot, level: status.state == "rolled_back" ? .warn : .info, ("slot", status.slot), ("version", status.version ?? "unknown"),
            ("state", status.state), ("reason", status.reason ?? ""))
        self.status = Locked(status)
        guard slots.trial else { confirmation = nil; return }
        // A reason from an earlier fall-back must not be taken for this trial's.
        try? FileSystem.remove(reasonPath)
        confirmation = SlotConfirmation(seconds: confirmSeconds, status: self.status, healthy: healthy, log: log)
        confirmation?.start()
    }

    public func stop() { confirmation?.stop() }
}

/// An update's first boot: once onair has run healthy for `update.confirm_seconds` (the
/// pipeline armed or streaming, the web server answering), it tells RAUC the slot is good
/// (`rauc status mark-good`), and the board boots it from then on. Until then the slot's
/// entry has no tries left, so any reboot — a crash, a panic, onair-update-deadline giving
/// up — boots the other slot.
public final class SlotConfirmation: Sendable {
    private let thread = StoppableThread()
    private let stopped = Completion()
    private let seconds: Int
    private let healthy: @Sendable () -> Bool
    private let markGood: @Sendable () -> Int32?
    private let log: Log
    private let status: Locked<UpdateStatus>

    init(seconds: Int, status: Locked<UpdateStatus>, healthy: @escaping @Sendable () -> Bool,
         markGood: @escaping @Sendable () -> Int32? = { ThisProcess.runShell("rauc status mark-good >/dev/null 2>&1") }, log: Log) {
        self.seconds = seconds
        self.status = status
        self.healthy = healthy
        self.markGood = markGood
        self.log = log
    }

    /// Checks every `interval` seconds; health must hold at every check for `seconds`.
    func start(interval: Double = 5) {
        thread.start(name: "onair-update") { [self] in
            var healthySince: Int64?
            while !thread.isStopped {
                let now = monotonicNanoseconds()
                if healthy() {
                    let since = healthySince ?? now
                    healthySince = since
                    if now - since >= Int64(seconds) * 1_000_000_000 {
                        confirm()
                        return
                    }
                } else {
                    healthySince = nil
                }
                if stopped.wait(seconds: interval) { return }
            }
        }
    }

    private func confirm() {
        let slot = status.withLock { $0.slot }
        if markGood() == 0 {
            status.withLock { $0.state = "confirmed" }
            log(.updateConfirmed, ("slot", slot), ("healthy_seconds", seconds))
        } else {
            log(.updateConfirmFailed, level: .error, ("slot", slot), ("error", "rauc status mark-good failed"),
                ("action", "the board boots the other slot at its next reboot"))
        }
    }

    func stop() {
        thread.stop { stopped.signal() }
    }

    /// Whether the web server answers a request for `url` within 3 s (any status).
    public static func webServerAnswers(_ url: String) -> Bool {
        var request = CurlClient.Request("GET", url)
        request.timeoutMilliseconds = 3000
        return ((try? CurlClient().perform(request))?.status ?? 0) > 0
    }
}
