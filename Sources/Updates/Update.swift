import Basics
import Files
import HTTP
import System

/// What `onair update` was asked: a bundle's file or URL, and whether to reboot into it.
public struct UpdateOptions: Equatable {
    public var source: String
    public var reboot = false
    /// Where a downloaded bundle is kept while it installs (on the data partition).
    public var directory = "/data/update"
    /// Where the install's state is kept for the appliance to show (InstallState).
    public var stateFile = InstallState.defaultPath

    public init(source: String) { self.source = source }
}

/// `onair update FILE|URL [--reboot]`: a signed update bundle (`make bundle`) installed by
/// RAUC into the root slot that is not running. RAUC checks the bundle's signature against
/// the board's keyring and that it is for this board before it writes a byte, and each
/// block against the signed hash tree as it copies (dm-verity); the running slot and the
/// data partition are never written. The new slot boots once at the next reboot and stays
/// only when onair confirms it healthy; otherwise the board comes back to this slot
/// (image/rootfs/onair-slot-efi and onair-slot-rpi).
public enum Update {
    public static let usage = """
    Usage: onair update FILE|URL [--reboot]

    Installs a signed update bundle (make bundle BOARD=...) into the root slot this board
    is not running, with RAUC: the signature and the board it is for are checked before
    anything is written; the running system and the data partition are not touched. A URL
    (http or https) is downloaded to /data/update first, at most 1 GiB.
      --reboot   reboot into the new slot when it is installed (otherwise it boots at
                 the next reboot; on a Raspberry Pi, the next one onair makes, since
                 it is tried by kexec)
    The new slot is tried once: it stays only when onair has run healthy in it for
    update.confirm_seconds; otherwise the board boots this slot again by itself.

    """

    /// The board's RAUC configuration: every image has one.
    public static let systemConfiguration = "/etc/rauc/system.conf"
    static let noSlots = "this system has no update slots (\(systemConfiguration) is missing: the image predates onair's updates; flash a current one)"
    /// The largest bundle downloaded: a 768 MiB slot and its hash tree, with room.
    static let largestBundle = 1 << 30


    public static func run(_ options: UpdateOptions) -> Int32 {
        guard FileSystem.exists(systemConfiguration) else {
            return fail(noSlots, status: 2)
        }
        if let busy = InstallReport.busy(at: options.stateFile) { return fail("\(options.source) was not installed: \(busy)") }
        if let why = cannotTry() { return fail("\(options.source) was not installed: \(why)") }
        var bundle = options.source
        var downloaded: String?
        let report = InstallReport(path: options.stateFile, InstallState(isURL(bundle) ? .downloading : .installing, source: options.source))
        let failed = { (reason: String) -> Int32 in
            report.update { $0.phase = .failed; $0.error = reason }
            return fail(reason)
        }
        if isURL(options.source) {
            do {
                bundle = try download(options.source, into: options.directory) { bytes in report.update { $0.bytes = bytes } }
            } catch { return failed("\(error)") }
            downloaded = bundle
            report.update { $0.phase = .installing }
        } else {
            guard case .regular? = FileSystem.kind(bundle) else { return failed("\(bundle): not a regular file") }
        }
        defer { if let downloaded { try? Path.removeIfPresent(downloaded) } }
        do {
            try Installer.install(bundle) { percent, step in
                say("\(percent)% \(step)")
                report.update { $0.percent = percent; $0.step = step }
            }
        } catch {
            return failed("\(options.source) was not installed: \(error)")
        }
        report.update { $0.phase = .installed; $0.percent = 100 }
        say("installed \(options.source) into the slot not running: it boots \(options.reboot ? "now" : nextReboot)")
        if options.reboot, !rebootIntoNewSlot() { return fail("the reboot into the new slot failed: reboot to boot it") }
        return 0
    }

    /// The board's boot loader backend (image/rootfs/onair-slot-efi or -rpi), which RAUC
    /// calls too.
    public static let slotBackend = "/usr/lib/onair/onair-slot"

    /// The reboot that boots an installed slot, for `--reboot` and for the appliance's
    /// (`?reboot=1`, `update.reboot = idle`): the file systems synced, then the backend's
    /// reboot (on EFI boards systemd's, on the Raspberry Pi's a kexec into the installed
    /// slot: its firmware cannot be asked to try one), or systemd's where there is none.
    /// False when it could not be asked for.
    public static func rebootIntoNewSlot() -> Bool {
        ThisProcess.syncFileSystems()
        return ThisProcess.runShell(FileSystem.exists(slotBackend) ? slotBackend + " reboot" : "systemctl reboot") == 0
    }

    /// Why this board cannot try a new slot (its backend's `can-try`: a Raspberry Pi 4 cannot
    /// kexec), or nil; asked before anything is downloaded, received or written.
    static func cannotTry(backend: String = slotBackend) -> String? {
        guard FileSystem.exists(backend) else { return nil }
        var said = ""
        let status = ThisProcess.run([backend, "can-try"]) { line in if said.isEmpty { said = line.trimmingWhitespace() } }
        return status == 0 ? nil : said.isEmpty ? "\(backend) can-try failed" : said
    }

    /// When an installed slot boots: on EFI boards at any reboot (systemd-boot tries it);
    /// on the Raspberry Pi's only at one onair makes, since it is tried by kexec.
    static var nextReboot: String {
        FileSystem.exists(BootSlots.autoboot) ? "at onair's next reboot (onair update --reboot, update.reboot = idle)" : "at the next reboot"
    }

    static func isURL(_ text: String) -> Bool { text.hasPrefix("http://") || text.hasPrefix("https://") }

    /// "  45% Checking bundle" → (45, "Checking bundle"); nil for any other line.
    static func progress(_ line: String) -> (percent: Int, step: String)? {
        guard let mark = line.firstIndex(of: "%") else { return nil }
        let number = line[..<mark]
        guard (1...3).contains(number.count), number.allSatisfy(\.isASCIIDigitish), let percent = Int(number), percent <= 100 else { return nil }
        return (percent, String(line[line.index(after: mark)...]).trimmingWhitespace())
    }

    /// The bundle at `url` into `directory`, at most `largestBundle` bytes; a transfer
    /// slower than 8 KiB/s for 30 s is given up. Written whole or not at all (AtomicFile).
    static func download(_ url: String, into directory: String, limit: Int = largestBundle, lowSpeed: (bytes: Int, seconds: Int) = (8192, 30),
                         received: @escaping (Int) -> Void = { _ in }) throws -> String {
        try AtomicFile.makeDirectories(directory)
        let path = directory + "/bundle.raucb"
        var written = 0, said = 0
        try AtomicFile.write(to: path) { fd, temporary in
            var failure: Error?
            var request = CurlClient.Request("GET", url)
            request.followRedirects = true
            request.lowSpeed = lowSpeed
            request.keep = limit
            request.refuseLarger = true
            request.sink = { bytes in
                do { try AtomicFile.writeAll(fd, bytes, path: temporary) } catch { failure = error; return false }
                written += bytes.count
                if written - said >= 16 << 20 { said = written; say("downloaded \(written >> 20) MiB"); received(written) }
                return true
            }
            let response: CurlClient.Response
            do { response = try CurlClient().perform(request) } catch {
                throw failure ?? UpdateError("\(url): \(error)")
            }
            guard response.isSuccess else { throw UpdateError("\(url): HTTP \(response.status)") }
        }
        say("downloaded \(url) (\(written) bytes)")
        return path
    }

    /// A line on standard output, written at once (not held in stdio's buffer), so it
    /// comes before a failure's line on standard error wherever both go.
    private static func say(_ text: String) {
        try? FileDescriptor.standardOutput.writeAll(Array("onair update: \(text)\n".utf8))
    }

    private static func fail(_ text: String, status: Int32 = 1) -> Int32 {
        StandardError.write("onair update: \(text)\n")
        return status
    }
}

public struct UpdateError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
