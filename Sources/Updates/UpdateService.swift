import Basics
import Files
import Logging
import Server
import System
import Threading

/// Updates as the running appliance sees them: `POST /api/update` (the operator's token; the
/// bundle written to the data partition as it comes, never held in memory, then installed
/// by RAUC as `onair update` does), and any install's progress — this one's or a terminal's
/// `onair update` (InstallState) — said on the console and in `/api/status`; once a bundle
/// is installed, the reboot into it when asked (`?reboot=1`) or, with `update.reboot =
/// idle`, at the first moment nothing is live or recording.
/// `update.reboot`: when an installed update boots — never by itself (the next power
/// cycle), or as soon as nothing is live or recording.
public enum UpdateReboot: String, Sendable, CaseIterable { case never, idle }

public final class UpdateService: Sendable {
    static let path = "/api/update"

    public struct Setup: Sendable {
        /// Where an uploaded bundle is kept until it is installed (the data partition).
        var directory: String
        var statePath = InstallState.defaultPath
        var reboot = UpdateReboot.never
        var systemConfiguration = Update.systemConfiguration
        /// RAUC's program (a stand-in in tests).
        var rauc = "rauc"
        /// The boot loader backend, asked whether the board can try a new slot.
        var slotBackend = Update.slotBackend
        /// Reboots the board; false when it could not.
        var restart: @Sendable () -> Bool = { Update.rebootIntoNewSlot() }

        public init(directory: String, statePath: String = InstallState.defaultPath, reboot: UpdateReboot = .never,
                    systemConfiguration: String = Update.systemConfiguration, rauc: String = "rauc", slotBackend: String = Update.slotBackend,
                    restart: @escaping @Sendable () -> Bool = { Update.rebootIntoNewSlot() }) {
            self.directory = directory
            self.statePath = statePath
            self.reboot = reboot
            self.systemConfiguration = systemConfiguration
            self.rauc = rauc
            self.slotBackend = slotBackend
            self.restart = restart
        }
    }

    private let setup: Setup
    private let log: Log
    private let installs = SerialWorker(name: "onair-install")
    /// An upload or install of this process's in progress: one at a time.
    private let busy = Locked(false)
    /// What the console was last told, so it hears only what changed.
    private let said = Locked(Said())

    private struct Said {
        var install: String?
        var phase: InstallState.Phase?
        var step = ""
        var tenths = -1
        /// The install whose new slot is to be booted as soon as it is in (`?reboot=1`).
        var rebootAfter: String?
        var rebooting = false
    }

    public init(_ setup: Setup, log: Log) {
        self.setup = setup
        self.log = log
    }

    public func stop() { installs.stop() }

    /// The install the state file tells of, for /api/status.
    public var install: InstallState? { InstallState.read(setup.statePath) }

    public var route: WebServer.BodyRoute {
        WebServer.BodyRoute(prefix: Self.path, maximumBody: Update.largestBundle, methods: ["POST"], operatorOnly: true) { [self] request in
            start(request)
        }
    }

    /// The head of an upload: refused at once (no slots, an install running, no room to
    /// write), or taken into a file on the data partition.
    func start(_ request: WebServer.BodyRequest) -> WebServer.StreamStart {
        let refuse = { (status: UInt32, text: String) in
            WebServer.StreamStart.refuse(.init(status: status, headers: [("Content-Type", "text/plain")], body: Array((text + "\n").utf8)))
        }
        guard request.path.isEmpty else { return refuse(404, "not found") }
        let reboot: Bool
        switch request.arguments["reboot"] {
        case nil, "0": reboot = false
        case "1": reboot = true
        case let other?: return refuse(400, "reboot=\(other): expected 1 (reboot into the new slot once installed) or 0")
        }
        guard FileSystem.exists(setup.systemConfiguration) else {
            return refuse(501, "this system has no update slots (\(setup.systemConfiguration) is missing: the image predates onair's updates; flash a current one)")
        }
        if let why = Update.cannotTry(backend: setup.slotBackend) { return refuse(501, why) }
        guard busy.withLock({ busy in defer { busy = true }; return !busy }) else { return refuse(409, "an update is being received or installed already") }
        if let other = InstallReport.busy(at: setup.statePath) {
            busy.withLock { $0 = false }
            return refuse(409, other)
        }
        let source = "an upload from \(request.client)"
        let upload: Upload
        do {
            try AtomicFile.makeDirectories(setup.directory)
            upload = try Upload(AtomicFile.Pending(setup.directory + "/upload.raucb"),
                                report: InstallReport(path: setup.statePath, InstallState(.receiving, source: source)), service: self)
        } catch {
            busy.withLock { $0 = false }
            return refuse(507, "the bundle cannot be written: \(error)")
        }
        return .take(WebServer.BodyStream(write: { upload.write($0) }, finish: { [self] in
            guard let bundle = upload.commit() else {
                return .init(status: 507, headers: [("Content-Type", "text/plain")], body: Array("\(upload.report.state.error ?? "the bundle was not kept")\n".utf8))
            }
            let id = upload.report.state.id
            if reboot { said.withLock { $0.rebootAfter = id } }
            installs.async { [self] in install(bundle, report: upload.report) }
            return .init(status: 202, headers: [("Content-Type", "application/json"), ("Location", "/api/status")],
                         body: JSON.fields(["accepted": "install", "bytes": upload.report.state.bytes, "status": "/api/status"]).bytes)
        }))
    }

    /// RAUC's install of an uploaded bundle, on the install worker.
    private func install(_ bundle: String, report: InstallReport) {
        defer {
            try? Path.removeIfPresent(bundle)
            busy.withLock { $0 = false }
        }
        report.update { $0.phase = .installing }
        do {
            try Installer.install(bundle, rauc: setup.rauc, systemConfiguration: setup.systemConfiguration) { percent, step in report.update { $0.percent = percent; $0.step = step } }
            report.update { $0.phase = .installed; $0.percent = 100 }
        } catch {
            report.update { $0.phase = .failed; $0.error = "\(error)" }
        }
    }

    /// A bundle being received: its file, and the state said of it. Dropped before its
    /// commit (the client went away, or sent more than a bundle can be), the file is gone
    /// and the install failed.
    final class Upload: @unchecked Sendable {
        private var file: AtomicFile.Pending?
        let report: InstallReport
        private let service: UpdateService
        private var reported = 0
        private var committed = false

        init(_ file: AtomicFile.Pending, report: InstallReport, service: UpdateService) {
            self.file = file
            self.report = report
            self.service = service
        }

        func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
            guard let file else { return false }
            do { try file.write(bytes) } catch {
                report.update { $0.error = "the bundle cannot be written: \(error)" }
                self.file = nil
                return false
            }
            let total = report.state.bytes + bytes.count
            // The state file at every 16 MiB (and below, in memory).
            if total - reported >= 16 << 20 { reported = total; report.update { $0.bytes = total } } else { report.updateQuietly { $0.bytes = total } }
            return true
        }

        /// The whole body is in: the bundle's path, or nil (the state says why).
        func commit() -> String? {
            committed = true
            guard let file, report.state.error == nil else {
                report.update { $0.phase = .failed }
                service.busy.withLock { $0 = false }
                return nil
            }
            self.file = nil
            do { try file.commit() } catch {
                report.update { $0.phase = .failed; $0.error = "the bundle cannot be written: \(error)" }
                service.busy.withLock { $0 = false }
                return nil
            }
            return file.path  // (the byte count reaches the state file with the install's first step)
        }

        deinit {
            guard !committed else { return }
            report.update { $0.phase = .failed; $0.error = "the upload stopped after \($0.bytes) bytes, before the whole bundle came (the client went away, or sent more than \(Update.largestBundle >> 20) MiB)" }
            service.busy.withLock { $0 = false }
        }
    }
}

extension UpdateService {
    /// Says what changed of the install the state file tells of, and reboots into an
    /// installed slot when that is asked for and (`update.reboot = idle`) nothing is live
    /// or recording. Every second, on the control scheduler.
    public func check(idle: Bool) {
        guard let state = install else { return }
        var lines: [(Event, Log.Level, [(String, Any)])] = []
        let reboot = said.withLock { said -> String? in
            if said.install != state.id || said.phase != state.phase {
                if said.install != state.id { said.step = ""; said.tenths = -1 }
                (said.install, said.phase) = (state.id, state.phase)
                switch state.phase {
                case .receiving, .downloading, .installing:
                    lines.append((.updateInstalling, .info, [("source", state.source), ("phase", state.phase.rawValue)]))
                case .installed:
                    let when = said.rebootAfter == state.id ? "now" : setup.reboot == .idle ? "when nothing is live or recording" : Update.nextReboot
                    lines.append((.updateInstalled, .info, [("source", state.source), ("boots", when)]))
                case .failed:
                    lines.append((.updateInstallFailed, .error, [("source", state.source), ("error", state.error ?? "unknown")]))
                }
            }
            if state.phase == .installing, state.step != said.step || state.percent / 10 != said.tenths {
                (said.step, said.tenths) = (state.step, state.percent / 10)
                lines.append((.updateProgress, .info, [("percent", state.percent), ("step", state.step)]))
            }
            guard state.phase == .installed, !said.rebooting else { return nil }
            if said.rebootAfter == state.id { said.rebooting = true; return "asked for with the upload" }
            if setup.reboot == .idle && idle { said.rebooting = true; return "update.reboot = idle, and nothing is live or recording" }
            return nil
        }
        for (event, level, fields) in lines { log.emit(event, level: level, fields) }
        guard let reboot else { return }
        log(.updateRebooting, ("source", state.source), ("reason", reboot))
        if !setup.restart() {
            log(.updateRebooting, level: .error, ("error", "the reboot failed"), ("action", "the new slot boots " + Update.nextReboot))
        }
    }
}
