import Basics
import Files
import System
import Threading

/// An install of an update bundle as it goes, kept in a file in /run by whoever installs —
/// `onair update` on a terminal, or the appliance itself for `POST /api/update` — and read
/// by the appliance: its console lines, `/api/status`, and the reboot at the next idle
/// moment (`update.reboot = idle`). One file, so an install from a terminal shows on the
/// console and the status page too; in /run, so a reboot (or a power cut) forgets it.
public struct InstallState: Equatable, Sendable {
    public enum Phase: String, Sendable {
        case receiving, downloading, installing, installed, failed
    }

    public var phase: Phase
    /// The file, URL or upload installed (for people).
    public var source: String
    public var percent = 0
    /// RAUC's step ("Copying image to rootfs.1").
    public var step = ""
    /// Bytes received or downloaded so far.
    public var bytes = 0
    public var error: String?
    /// Whoever installs: a running state left by a process that is gone is not taken for
    /// a running install.
    var pid: Int32
    /// When it began (CLOCK_MONOTONIC, ms: one clock for every process of a boot).
    var started: Int

    /// Which install this is: two of one process are told apart by when they began.
    var id: String { "\(pid)@\(started)" }

    public static let defaultPath = "/run/onair/update.state"

    init(_ phase: Phase, source: String, pid: Int32 = ThisProcess.id, started: Int = Int(monotonicNanoseconds() / 1_000_000)) {
        self.phase = phase
        self.source = source
        self.pid = pid
        self.started = started
    }

    var running: Bool { [.receiving, .downloading, .installing].contains(phase) }

    var text: String {
        let line = { (value: String) in String(value.map { $0 == "\n" || $0 == "\r" ? " " : $0 }) }
        return "phase=\(phase.rawValue)\nsource=\(line(source))\npercent=\(percent)\nstep=\(line(step))\nbytes=\(bytes)\n"
            + "pid=\(pid)\nstarted=\(started)\n" + (error.map { "error=\(line($0))\n" } ?? "")
    }

    /// The state a file says; nil for one that does not parse. Numbers of at most 12
    /// digits: nothing in the file can overflow.
    init?(text: String) {
        let fields = ImageManifest.fields(text)
        let number = { (key: String) -> Int? in
            guard let value = fields[key], (1...12).contains(value.count), value.allSatisfy(\.isASCIIDigitish) else { return nil }
            return Int(value)
        }
        guard let phase = fields["phase"].flatMap(Phase.init(rawValue:)), let source = fields["source"],
              let percent = number("percent"), percent <= 100, let bytes = number("bytes"),
              let pid = number("pid"), pid <= Int(Int32.max), let started = number("started") else { return nil }
        self.init(phase, source: source, pid: Int32(pid), started: started)
        self.percent = percent
        self.bytes = bytes
        step = fields["step"] ?? ""
        error = fields["error"]
    }

    /// The install the file at `path` tells of, if any. One said to be running by a
    /// process that is gone stopped half-way (killed, or the appliance restarted during
    /// an upload): failed, and RAUC's slot is as its last install left it.
    static func read(_ path: String) -> InstallState? {
        guard case .regular? = FileSystem.kind(path), let text = FileSystem.readText(path, limit: 8192),
              var state = InstallState(text: text) else { return nil }
        if state.running && !ThisProcess.exists(state.pid) {
            state.error = "the install stopped half-way (process \(state.pid) ended while \(state.phase.rawValue))"
            state.phase = .failed
        }
        return state
    }
}

/// The state of one install, written to its file at each change (atomically: a reader
/// sees one state or the next). A state that cannot be written is only not shown.
public final class InstallReport: @unchecked Sendable {
    let path: String
    private(set) var state: InstallState

    init(path: String, _ state: InstallState) {
        self.path = path
        self.state = state
        write()
    }

    func update(_ change: (inout InstallState) -> Void) {
        change(&state)
        write()
    }

    /// A change kept for the next write (a byte count between two of them).
    func updateQuietly(_ change: (inout InstallState) -> Void) { change(&state) }

    private func write() {
        try? AtomicFile.makeDirectories(AtomicFile.directory(of: path))
        try? AtomicFile.write(Array(state.text.utf8), to: path)
    }

    /// Refused when another install is running (RAUC takes one at a time, and a second
    /// download would be for nothing): the one-line reason.
    static func busy(at path: String) -> String? {
        guard let other = InstallState.read(path), other.running, other.pid != ThisProcess.id else { return nil }
        return "another install is running (\(other.source), \(other.phase.rawValue), process \(other.pid))"
    }
}

/// RAUC's install of a bundle, its progress handed on as it comes.
public enum Installer {
    /// Installs `bundle` into the slot not running; throws the reason in one line. `rauc`:
    /// the program (a stand-in in tests).
    static func install(_ bundle: String, rauc: String = "rauc", systemConfiguration: String = Update.systemConfiguration,
                        progress: (_ percent: Int, _ step: String) -> Void) throws {
        try checkFits(bundle, rauc: rauc, systemConfiguration: systemConfiguration)
        // RAUC's own lines: "NN% step" while it works, then LastError on failure.
        var lastError: String?
        var lastLine = ""
        let status = ThisProcess.run([rauc, "install", bundle]) { line in
            let text = line.trimmingWhitespace()
            if let step = Update.progress(text) {
                progress(step.percent, step.step)
            } else if text.hasPrefix("LastError:") {
                lastError = String(text.dropFirst("LastError:".count)).trimmingWhitespace()
            } else if !text.isEmpty {
                lastLine = text
            }
        }
        guard status == 0 else {
            throw UpdateError(lastError ?? (status == nil ? "\(rauc) could not be run" : lastLine))
        }
    }

    /// RAUC 1.8 writes an image into a slot without comparing their sizes first: one too
    /// large fails only where the device ends, with the slot half written. So the sizes
    /// the bundle's signed manifest gives (`rauc info`, which checks the signature) are
    /// compared with the smallest root slot's device before anything is written. A bundle
    /// `rauc info` refuses goes on to `rauc install`, which says why in its own words.
    static func checkFits(_ bundle: String, rauc: String, systemConfiguration: String) throws {
        var manifest: [String: String] = [:]
        guard ThisProcess.run([rauc, "info", "--output-format=shell", bundle], eachLine: { line in
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { return }
            // The shell form: a value in single quotes, or a bare number.
            var value = parts[1].trimmingWhitespace()
            if value.count >= 2, value.first == "'", value.last == "'" { value = String(value.dropFirst().dropLast()) }
            manifest[String(parts[0])] = value
        }) == 0 else { return }
        let slots = rootSlots(FileSystem.readText(systemConfiguration, limit: 65536) ?? "")
        let sized = slots.compactMap { slot -> (name: String, bytes: Int64)? in
            guard let fd = try? FileDescriptor.open(slot.device, .readOnly), let bytes = try? fd.length() else { return nil }
            return (slot.name, bytes)
        }
        guard let smallest = sized.min(by: { $0.bytes < $1.bytes }) else { return }
        for (key, value) in manifest where key.hasPrefix("RAUC_IMAGE_SIZE_") {
            let index = key.dropFirst("RAUC_IMAGE_SIZE_".count)
            guard manifest["RAUC_IMAGE_CLASS_\(index)"] == "rootfs" else { continue }
            // More than 15 digits is more than any card: too large, and no Int traps on it.
            guard value.allSatisfy(\.isASCIIDigitish), let bytes = value.count <= 15 ? Int64(value) : Int64.max else { continue }
            if bytes > smallest.bytes {
                throw UpdateError("its root file system (\(bytes >> 20) MiB) is larger than slot \(smallest.name) (\(smallest.bytes >> 20) MiB)")
            }
        }
    }

    /// The `[slot.rootfs.N]` sections of RAUC's system.conf: their names and devices.
    static func rootSlots(_ text: String) -> [(name: String, device: String)] {
        var slots: [(name: String, device: String)] = []
        var section = ""
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingWhitespace()
            if line.hasPrefix("[") && line.hasSuffix("]") { section = String(line.dropFirst().dropLast()); continue }
            guard section.hasPrefix("slot.rootfs."), line.hasPrefix("device=") else { continue }
            slots.append((String(section.dropFirst("slot.".count)), String(line.dropFirst("device=".count)).trimmingWhitespace()))
        }
        return slots
    }
}
