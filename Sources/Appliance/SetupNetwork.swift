import Drawing
import Files
import Logging
import Network
import Server
import System
import Threading

/// When the board opens its setup network (`SetupAccessPoint`), and what runs on it while
/// it is open: the access point itself (onair-setup-ap@.service), a DNS server that
/// answers every name with the board, and port 80 sending every request to the setup
/// page, so a phone that joins shows the page by itself. Checked every few seconds on the
/// control scheduler; only on the board (`BoardUnits.onTheBoard`) with its radio present.
final class SetupNetwork: Sendable {
    /// What the decision looks at, each tick.
    struct Inputs {
        var wifiConfigured: Bool
        var wifi: WiFiStatus.State?
        var wifiProblem: String?
        /// How long the network has refused the password (0: it has not).
        var wrongPasswordFor: Double
        /// Since the radio is there (this run), and since power-on.
        var secondsRunning: Double
        var uptime: Double
        /// An IPv4 address on a link other than the setup network's.
        var hasAddress: Bool
        var hasOperator: Bool
        var saved: Bool
    }

    /// How long a board waits before it opens the setup network: for a refused password
    /// (wpa_supplicant's retries: a router whose password was changed back is joined
    /// meanwhile), for its own Wi-Fi, for any network at all.
    static let waitForPassword = 60.0, waitForWiFi = 180.0, waitForAnyNetwork = 60.0
    /// Open this long with no phone on it, the network closes and the station tries its
    /// own Wi-Fi again (a router back in range is joined) for `pause` before it reopens.
    static let window = 300.0, pause = 180.0
    /// After a save the network stays this long, so the page that says so reaches the
    /// phone (its TCP retransmits: 1 s, 2 s, 4 s) before the radio is taken back.
    static let afterSave = 10.0

    /// Why the network is wanted now, or nil: a pure decision, for the tests.
    static func reason(_ now: Inputs) -> String? {
        if now.saved { return nil }
        // A board never set up opens an open network only in its first minutes.
        if !now.hasOperator && now.uptime > Double(SetupAccessPoint.openMinutes * 60) { return nil }
        if now.wifiConfigured {
            if now.wifi == .joined { return nil }
            if now.wrongPasswordFor >= waitForPassword {
                return "the Wi-Fi of onair.conf cannot be joined: \(now.wifiProblem ?? "a wrong password")"
            }
            return now.secondsRunning >= waitForWiFi ? "no network of onair.conf's [wifi] joined in \(Int(waitForWiFi / 60)) minutes" : nil
        }
        if now.hasAddress { return nil }
        return now.secondsRunning >= waitForAnyNetwork ? "no network: no cable with an address and no [wifi] in onair.conf" : nil
    }

    private let settings: Settings
    private let wifi: WiFiMonitor?
    private let log: Log
    private let state = Locked(State())
    private struct State {
        var open = false
        /// What the screen shows while the network is open.
        var card: ScreenCard?
        /// When the page saved, and the board's units that read what it saved: started
        /// again once the network has closed (the station's would take the radio now).
        var saved: (at: Int64, units: [String])?
        var seen: [SeenNetwork] = []
        var dns: SetupDNSServer?
        var captive: WebServer?
        var task: (Scheduler, Scheduler.Task)?
        var lastScan: Int64 = 0
        /// When the radio was first seen (the waits count from then).
        var radioSince: Int64?
        /// Since when the network has refused the password.
        var refusedSince: Int64?
        /// When the network opened, and when it last closed.
        var openedAt: Int64 = 0
        var closedAt: Int64?
    }

    init(settings: Settings, wifi: WiFiMonitor?, log: Log) {
        self.settings = settings
        self.wifi = wifi
        self.log = log
    }

    /// Whether this board can have a setup network: the policy allows it and onair is the
    /// board's service (the radio may come later: a USB adapter, a module loaded).
    static func possible(_ settings: Settings) -> Bool { settings.networkSetup == .auto && BoardUnits.onTheBoard }

    var isOpen: Bool { state.withLock { $0.open } }
    /// The networks the radio saw, strongest first, for the page's list.
    var seen: [SeenNetwork] { state.withLock { $0.seen } }
    var ssid: String { SetupAccessPoint.ssid(deviceLabel: NetworkNames.label(settings.deviceName ?? "onair")) }
    /// Beside the picture on the attached screen while the network is open.
    var card: ScreenCard? { state.withLock { $0.open ? $0.card : nil } }

    /// The network's QR code (a phone's camera joins it), its name, what it asks for, the
    /// page: never the password itself.
    static func card(ssid: String, secured: Bool, page: String) -> ScreenCard {
        ScreenCard(title: "Set up this camera", code: QRCode(text: SetupAccessPoint.joinCode(ssid: ssid, secured: secured)),
                   lines: ["Wi-Fi: " + ssid, secured ? "Password: the operator's" : "Open: choose a password", "Page: " + page.dropFirst("http://".count)])
    }
    /// The setup page on the setup network: the board's address there, the web server's
    /// port (`server.listen`'s).
    static func pageURL(listen: String?) -> String {
        let port = listen.flatMap(Runner.port) ?? 8080
        return "http://\(StaticAddress.text(SetupAccessPoint.address)):\(port)\(SettingsService.setupPath)"
    }
    var pageURL: String { Self.pageURL(listen: settings.listen) }

    func start(on scheduler: Scheduler) {
        let task = scheduler.every(5, "setup network") { [self] _ in tick() }
        state.withLock { $0.task = (scheduler, task) }
    }

    /// The page saved settings: the network closes once the answer has reached the phone
    /// (`afterSave`), then `units` start again, and it stays closed for this run (the run
    /// starts again on the new file, when the network is closed: `isClosing`).
    func saved(units: [String]) {
        state.withLock { $0.saved = (KernelClock.monotonic(), ($0.saved?.units ?? []) + units) }
    }

    /// Whether a save is waiting for the network to close (the run must not restart
    /// before: its stop would close it under the phone's answer).
    var isClosing: Bool { state.withLock { $0.open && $0.saved != nil } }

    func stop() {
        if let (scheduler, task) = state.withLock({ $0.task }) { scheduler.cancel(task) }
        if isOpen { close(reason: "onair stops") }
    }

    private func tick() {
        // The waits count from when the radio is there.
        guard FileSystem.exists("/sys/class/net/\(settings.wifi.interface)/phy80211") else {
            state.withLock { $0.radioSince = nil }
            if isOpen { close(reason: "the radio is gone") }
            return
        }
        let clock = KernelClock.monotonic()
        let since = state.withLock { state in
            if state.radioSince == nil { state.radioSince = clock }
            return state.radioSince ?? clock
        }
        let status = wifi?.status
        let refused = status?.state == .failed && status?.problemKind == "wrong-password"
        let refusedSince = state.withLock { state in
            state.refusedSince = refused ? state.refusedSince ?? clock : nil
            return state.refusedSince
        }
        let now = Inputs(wifiConfigured: settings.wifi.isConfigured, wifi: status?.state, wifiProblem: status?.problem,
                         wrongPasswordFor: refusedSince.map { Double(clock - $0) / 1e9 } ?? 0,
                         secondsRunning: Double(clock - since) / 1e9, uptime: Double(clock) / 1e9,
                         hasAddress: NetworkInterfaces.ipv4().contains { $0.name != "lo" && $0.name != SetupAccessPoint.interface },
                         hasOperator: settings.serverToken != nil, saved: state.withLock { $0.saved != nil })
        scan()
        if isOpen {
            let openFor = Double(clock - state.withLock { $0.openedAt }) / 1e9
            if let savedAt = state.withLock({ $0.saved?.at }) {
                if Double(clock - savedAt) / 1e9 >= Self.afterSave { close(reason: "settings saved") }
            } else if !now.wifiConfigured && now.hasAddress { close(reason: "a network is up") }
            else if openFor >= Self.window && !phoneOnIt() { close(reason: "no phone joined in \(Int(Self.window / 60)) minutes: the board tries its Wi-Fi again") }
            else { serve() }
            return
        }
        let paused = state.withLock { $0.closedAt.map { Double(clock - $0) / 1e9 < Self.pause } ?? false }
        if !paused, let reason = Self.reason(now) { open(reason: reason) }
    }

    /// Whether a phone is on the setup network (the access point's station list).
    private func phoneOnIt() -> Bool {
        guard let control = Self.control(SetupAccessPoint.interface),
              let first = try? control.request("STA-FIRST") else { return false }
        return !first.isEmpty && !first.hasPrefix("FAIL")
    }

    /// A scan on the station's side every 30 s while the network is closed (wpa_supplicant's
    /// control socket), read back at the next tick: the page's list.
    private func scan() {
        guard let control = Self.control(settings.wifi.interface) else { return }
        if let results = try? control.request("SCAN_RESULTS") {
            let seen = WiFiScan.parse(results, leaving: ssid)
            state.withLock { $0.seen = seen }
        }
        // None while the network is open: a scan takes the radio off its channel.
        let now = KernelClock.monotonic()
        if state.withLock({ !$0.open && now - $0.lastScan > 30_000_000_000 }) {
            _ = try? control.request("SCAN")
            state.withLock { $0.lastScan = now }
        }
    }

    private func open(reason: String) {
        let password = SetupAccessPoint.password(operatorToken: settings.serverToken)
        // On the channel of the network to be joined, when it is seen: a radio serves one
        // channel at a time, and the station joins it there once the page has saved.
        let wanted = Set(settings.wifi.joinable.compactMap(\.ssid))
        let frequency = seen.first { wanted.contains($0.ssid) && $0.frequency < 3000 }?.frequency ?? 2437
        let config = SetupAccessPoint.supplicantConfig(ssid: ssid, password: password, country: settings.wifi.country, frequency: frequency)
        // sysfs gives its files a size of a page, whatever they hold.
        let stationAddress = FileSystem.readText("/sys/class/net/\(settings.wifi.interface)/address", limit: 4096)
        guard let mac = stationAddress.flatMap(SetupAccessPoint.macAddress) else {
            log(.setupFailed, level: .error, ("error", "no MAC address for \(settings.wifi.interface)"))
            return
        }
        do {
            try Runner.writeFile(Array(config.utf8), to: SetupAccessPoint.configFile, permissions: 0o600)
            try Runner.writeFile(Array("AP_ADDRESS=\(mac)\n".utf8), to: SetupAccessPoint.environmentFile)
        } catch {
            log(.setupFailed, level: .error, ("error", "\(error)"))
            return
        }
        // The station rests while the network is open: its scans would take the radio off
        // the access point's channel, and a phone's frames would go unanswered.
        station("DISCONNECT")
        guard systemctl("start") else {
            station("RECONNECT")
            return
        }
        let card = Self.card(ssid: ssid, secured: password != nil, page: pageURL)
        state.withLock { $0.open = true; $0.openedAt = KernelClock.monotonic(); $0.card = card }
        log(.setupOpen, ("ssid", ssid), ("security", password == nil ? "open" : "wpa2 (the operator's password)"),
            ("page", pageURL), ("why", reason))
    }

    /// The DNS server and port 80, once the setup network's address is on its interface
    /// (networkd sets it a moment after the access point starts).
    private func serve() {
        let address = SetupAccessPoint.address
        let (dns, captive) = state.withLock { ($0.dns, $0.captive) }
        if dns == nil, let server = try? SetupDNSServer(bound: address) {
            server.start()
            state.withLock { $0.dns = server }
        }
        if captive == nil, let server = try? WebServer(listen: "\(StaticAddress.text(address)):80", root: settings.dataDirectory,
                                                         captive: pageURL, limits: WebServer.Limits(connections: 32, perAddress: 8), log: log) {
            state.withLock { $0.captive = server }
        }
    }

    private func close(reason: String) {
        let (dns, captive) = state.withLock { state in
            defer { state.open = false; state.dns = nil; state.captive = nil }
            return (state.dns, state.captive)
        }
        dns?.stop()
        captive?.stop()
        _ = systemctl("stop")
        station("RECONNECT")
        if let units = state.withLock({ $0.saved?.units }) { BoardUnits.restart(units, log: log) }
        state.withLock { $0.closedAt = KernelClock.monotonic() }
        log(.setupClosed, ("ssid", ssid), ("why", reason))
    }

    /// wpa_supplicant's control socket for `interface`, if it runs there.
    private static func control(_ interface: String) -> WPAControl? {
        try? WPAControl(path: SupplicantConfig.controlDirectory + "/" + interface)
    }

    /// A command to the station side's wpa_supplicant (its control socket).
    private func station(_ command: String) {
        guard let control = Self.control(settings.wifi.interface) else { return }
        if let answer = try? control.request(command), answer.hasPrefix("FAIL") {
            log(.setupFailed, level: .warn, ("command", command), ("said", answer.trimmingWhitespace()))
        }
    }

    private func systemctl(_ verb: String) -> Bool {
        let unit = "onair-setup-ap@\(settings.wifi.interface).service"
        var said: [String] = []
        let status = ThisProcess.run(["systemctl", verb, unit]) { said.append($0) }
        if status != 0 { log(.setupFailed, level: .error, ("unit", unit), ("verb", verb), ("said", said.joined(separator: " "))) }
        return status == 0
    }
}

extension Event {
    /// The setup network is open: its name, whether it asks a password, the page, why.
    static let setupOpen = Event("setup.open", console: true)
    static let setupClosed = Event("setup.closed", console: true)
    static let setupFailed = Event("setup.failed", console: true)
}
