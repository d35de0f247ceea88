import Logging
import System
import Threading

/// What the Wi-Fi does, watched from wpa_supplicant's control interface on a thread of
/// its own (`onair-wifi`): events as they come, STATUS every couple of seconds (the
/// address comes from systemd-networkd's DHCP, which wpa_supplicant reads back). When
/// wpa_supplicant is not (yet) running, it looks again every two seconds. It only reads:
/// joining is wpa_supplicant's work, from the configuration `onair wifi-config` made at boot.
public final class WiFiMonitor: Sendable {
    private let settings: WiFiSettings
    private let directory: String
    private let log: Log
    private let thread = StoppableThread()
    private let pipe: WakePipe
    private let tracker: Locked<WiFiTracker>

    static let pollMs: Int32 = 2000
    /// A radio that has not appeared this long after the start is said to be missing
    /// (udev has named every interface by then, even on a slow board).
    static let radioWaitNanoseconds: Int64 = 60_000_000_000

    /// `directory`: wpa_supplicant's control directory (`SupplicantConfig.controlDirectory`).
    public init(settings: WiFiSettings, directory: String = SupplicantConfig.controlDirectory, log: Log) throws {
        self.settings = settings
        self.directory = directory
        self.log = log
        pipe = try WakePipe()
        tracker = Locked(WiFiTracker(settings: settings))
    }

    public var status: WiFiStatus { tracker.withLock { $0.status } }

    public func start() {
        if settings.country == nil {
            log(.wifiNoCountry, level: .warn, ("interface", settings.interface),
                ("note", "no wifi.country: the radio uses only the channels allowed in every country"))
        }
        thread.start(name: "onair-wifi") { [self] in run() }
    }

    public func stop() { thread.stop(waking: pipe.wake) }

    private func run() {
        var control: WPAControl?
        var lastStatus: Int64 = 0
        let started = KernelClock.monotonic()
        while !thread.isStopped {
            let now = KernelClock.monotonic()
            if control == nil, now - started > Self.radioWaitNanoseconds, (try? Path.status("/sys/class/net/" + settings.interface)) == nil,
               let change = tracker.withLock({ $0.noRadio() }) {
                say(change)
            }
            if control == nil {
                control = try? WPAControl(path: directory + "/" + settings.interface)
                do { try control?.attach() } catch { control = nil }
                if control != nil { lastStatus = 0 }
            }
            if let current = control, now - lastStatus >= Int64(Self.pollMs) * 1_000_000 {
                lastStatus = now
                do {
                    let reply = try current.request("STATUS") { handle(event: $0) }
                    if let change = tracker.withLock({ $0.statusReply(reply) }) { say(change) }
                } catch {
                    control = nil
                    tracker.withLock { $0.lost() }
                }
            }
            var waits: [(FileDescriptor, Poll.Events)] = [(pipe.read, .readable)]
            if let control { waits.append((FileDescriptor(borrowing: control.descriptor), .readable)) }
            _ = try? Poll.wait(waits, timeoutMs: Self.pollMs)
            pipe.drain()
            while let message = try? control?.receive() { handle(event: message) }
        }
        if let control { _ = try? control.request("DETACH", timeoutMs: 200) }
    }

    private func handle(event message: String) {
        let text = WPAControl.eventText(message)
        if let change = tracker.withLock({ $0.event(text) }) { say(change) }
    }

    private func say(_ change: WiFiTracker.Change) {
        let interface = ("interface", settings.interface)
        switch change {
        case .joined(let network, let ssid):
            log(.wifiJoined, interface, ("network", network.isEmpty ? "wifi" : network), ("ssid", ssid))
        case .address(let address):
            log(.wifiAddress, interface, ("address", address))
        case .failed(let kind, let problem):
            log(.wifiFailed, level: .warn, interface, ("kind", kind), ("problem", problem))
        case .left(let reason):
            log(.wifiLeft, level: .warn, interface, ("reason", reason))
        }
    }
}
