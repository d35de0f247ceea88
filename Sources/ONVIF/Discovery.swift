import Logging
import System
import Threading

/// WS-Discovery (2005/04, as ONVIF Core §7.3 uses it) on UDP 3702: a Hello to
/// 239.255.255.250 on each LAN interface at start (and on each that gets an address
/// later: a board's DHCP lease often comes after onair has started), a Bye at stop, and a
/// ProbeMatches to
/// whoever sends a Probe the device matches — by multicast on the LAN interfaces it joined
/// the group on, or sent straight to one of the board's addresses (a directed probe, §4.2).
/// Only the link is answered (WS-Discovery is link-local, §3.1.1): a probe that came in on
/// an interface onair does not listen on, or from a source outside that interface's subnet
/// (a spoofed source elsewhere: an answer 14 times the probe's size would go there), is
/// not answered; nor is the board's own loopback answered but from loopback. One thread;
/// probes are answered at most `answersPerSecond` a second, and `answersPerSource` to any
/// one source, so a flood costs a bounded share of one core, never touches the stream, and
/// cannot take the answers real probes need.
public final class Discovery: Sendable {
    public static let group: [UInt8] = [239, 255, 255, 250]
    public static let defaultPort: UInt16 = 3702
    static let namespace = "http://schemas.xmlsoap.org/ws/2005/04/discovery"
    static let addressing = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
    static let answersPerSecond = 50
    static let answersPerSource = 5

    public let port: UInt16
    let device: ONVIFDevice
    /// The device service's URL at each of the given addresses (`http://a.b.c.d:port/…`).
    let xaddrs: @Sendable (_ interfaces: [[UInt8]], _ forLoopback: Bool) -> [String]
    /// UDP 3702 on every interface (the kernel's), or a test's in memory.
    let link: MulticastPort
    /// The LAN interfaces' IPv4 addresses now, looked at every `rescan`; and those the
    /// group is joined on.
    let currentInterfaces: @Sendable () -> [InterfaceAddress]
    private let joined = Locked<[InterfaceAddress]>([])
    /// Nanoseconds between looks at the interfaces.
    let rescan: Int64
    /// The rescans' and the answer budgets' time; the start's date (AppSequence).
    let clock: ServerClock
    /// When the interfaces were first looked at (in `init`, not when the thread gets to run).
    private let firstScan: Int64
    var interfaces: [[UInt8]] { joined.withLock { $0.map(\.address) } }
    let log: Log
    let refusals = RefusalLog(perMinute: 20)
    private let thread = StoppableThread()
    /// WS-Discovery §7's AppSequence: an instance id that grows with each start (the start
    /// time in seconds) and a message number that grows with each message.
    private let instance: Int64
    private let messages = Locked<Int>(0)

    /// `interfaces`: the IPv4 addresses (and prefixes) of the LAN interfaces to join the
    /// group on, announce from and answer on, as they are now (asked again every five seconds).
    public convenience init(device: ONVIFDevice, port: UInt16 = defaultPort, interfaces: @escaping @Sendable () -> [InterfaceAddress],
                xaddrs: @escaping @Sendable (_ interfaces: [[UInt8]], _ forLoopback: Bool) -> [String],
                rescanSeconds: Double = 5, log: Log, clock: ServerClock = .system) throws {
        let socket = try FileDescriptor.sharedDatagramSocket(bound: SocketAddress(bytes: [0, 0, 0, 0], port: port)!)
        try socket.reportLocalAddresses()
        self.init(device: device, link: try UDPPort(socket), port: try socket.boundAddress().port, interfaces: interfaces, xaddrs: xaddrs,
                  rescanSeconds: rescanSeconds, log: log, clock: clock, thread: true)
    }

    /// `thread` false: no thread of its own; a test runs its turns (`turn`).
    init(device: ONVIFDevice, link: MulticastPort, port: UInt16, interfaces: @escaping @Sendable () -> [InterfaceAddress],
         xaddrs: @escaping @Sendable (_ interfaces: [[UInt8]], _ forLoopback: Bool) -> [String],
         rescanSeconds: Double = 5, log: Log, clock: ServerClock, thread: Bool) {
        self.device = device
        self.clock = clock
        rescan = Int64(rescanSeconds * 1e9)
        self.xaddrs = xaddrs
        self.log = log
        self.link = link
        self.port = port
        currentInterfaces = interfaces
        instance = max(1, clock.wall() / 1_000_000_000)
        firstScan = clock.now()
        refresh(first: true)
        if thread { self.thread.start(name: "onair-discovery") { [self] in run() } }
    }

    /// Joins the group on interfaces that have come (a Hello on each, one line), and
    /// forgets those that have gone.
    func refresh(first: Bool = false) {
        let now = currentInterfaces()
        let addresses = now.map(\.address)
        let (added, changed) = joined.withLock { joined -> ([[UInt8]], Bool) in
            let before = joined.map(\.address)
            let added = addresses.filter { !before.contains($0) }
            let changed = joined != now
            joined = now
            return (added, changed)
        }
        for interface in added { link.join(group: Self.group, interface: interface) }
        announce(Self.hello, on: added)
        if changed || first {
            log.emit(.discoveryListening, level: .info, [("port", Int(port)), ("interfaces", now.map { SocketAddress.host($0.address) }.joined(separator: " "))])
        }
    }


    /// Says Bye on the LAN, then stops.
    public func stop() {
        guard !thread.isStopped else { return }
        thread.stop { link.wake() }
        announce(Self.bye, on: interfaces)
    }

    deinit { stop() }

    /// What the thread keeps from one turn to the next.
    struct Turns {
        var budget = AnswerBudget(perSecond: Discovery.answersPerSecond)
        var perSource = SourceBudget(perSecond: Discovery.answersPerSource)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        /// When the interfaces were last looked at.
        var scanned: Int64
    }

    private func run() {
        var turns = Turns(scanned: firstScan)
        while !thread.isStopped {
            link.wait(timeoutMs: 500)
            turn(&turns)
        }
    }

    /// One turn: the interfaces looked at again when `rescan` has passed on the clock, then
    /// up to 64 datagrams read and the probes among them answered within the budgets.
    func turn(_ turns: inout Turns) {
        if clock.now() - turns.scanned >= rescan {
            turns.scanned = clock.now()
            refresh()
        }
        for _ in 0..<64 {
            guard let (count, from, local) = link.receiveWithLocal(into: &turns.buffer) else { break }
            let now = clock.now()
            if let refusal = Self.outOfScope(source: from.bytes, local: local, interfaces: joined.withLock { $0 }) {
                refusals.emit(.discoveryRefused, to: log, [("client", from.host), ("reason", refusal)])
                continue
            }
            guard turns.budget.allows(now: now), turns.perSource.allows(from.bytes, now: now) else {
                refusals.emit(.discoveryRefused, to: log, [("client", from.host),
                                                           ("reason", "more than \(Self.answersPerSecond) probes a second, or \(Self.answersPerSource) from one source")])
                continue
            }
            if let reply = answer(Array(turns.buffer[0..<count]), from: from) {
                turns.budget.spend()
                turns.perSource.spend(from.bytes)
                link.send(Array(reply.utf8), to: from)
            }
        }
    }

    /// The ProbeMatches for a datagram that is a Probe this device matches; nil for
    /// anything else (a Hello, another device's answer, garbage: all ignored, one line
    /// for what is not XML).
    func answer(_ datagram: [UInt8], from: SocketAddress) -> String? {
        let root: XMLElement
        do { root = try XMLReader.parse(datagram) } catch {
            refusals.emit(.discoveryRefused, to: log, [("client", from.host), ("reason", "\(error)")])
            return nil
        }
        guard root.name == "Envelope", let probe = root.child("Body")?.child("Probe"), probe.namespace == Self.namespace else { return nil }
        guard matches(types: probe.child("Types")?.text ?? "", scopes: probe.child("Scopes")?.text ?? "") else { return nil }
        let relatesTo = root.find("Header", "MessageID")?.text ?? ""
        let loopback = from.bytes.first == 127
        let match = "<d:ProbeMatches><d:ProbeMatch>\(endpoint)<d:Types>dn:NetworkVideoTransmitter tds:Device</d:Types>"
            + "<d:Scopes>\(SOAP.escape(device.scopes.joined(separator: " ")))</d:Scopes>"
            + "<d:XAddrs>\(SOAP.escape(xaddrs(interfaces, loopback).joined(separator: " ")))</d:XAddrs><d:MetadataVersion>1</d:MetadataVersion>"
            + "</d:ProbeMatch></d:ProbeMatches>"
        return message(action: "ProbeMatches", body: match, extraHeader: "<wsa:RelatesTo>\(SOAP.escape(relatesTo))</wsa:RelatesTo>",
                       to: "http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous")
    }

    /// WS-Discovery §5.1: every type asked for is one of the device's (by local name: a
    /// client's prefixes are its own), and every scope asked for is one of its scopes or
    /// a path prefix of one (RFC 3986 matching, the default rule).
    func matches(types: String, scopes: String) -> Bool {
        let offered = ["NetworkVideoTransmitter", "Device"]
        for type in types.split(whereSeparator: \.isWhitespace) {
            let local = type.split(separator: ":").last.map(String.init) ?? ""
            guard offered.contains(local) else { return false }
        }
        for scope in scopes.split(whereSeparator: \.isWhitespace) {
            let wanted = String(scope).hasSuffix("/") ? String(scope.dropLast()) : String(scope)
            guard device.scopes.contains(where: { $0 == wanted || $0.hasPrefix(wanted + "/") }) else { return false }
        }
        return true
    }

    /// Why a datagram from `source` that came in on the local address `local` is not
    /// answered: it came in where onair does not listen, or from where no host on that
    /// link can be; nil when it may be answered. Loopback answers loopback alone.
    static func outOfScope(source: [UInt8], local: [UInt8], interfaces: [InterfaceAddress]) -> String? {
        if source.first == 127 || local.first == 127 {
            return source.first == 127 && local.first == 127 ? nil : "loopback and the LAN do not mix"
        }
        guard let interface = interfaces.first(where: { $0.address == local }) else {
            return "came in on \(SocketAddress.host(local)), where onair does not listen"
        }
        guard interface.contains(source) else {
            return "not on the link of \(SocketAddress.host(local))/\(interface.prefixLength)"
        }
        return nil
    }

    var endpoint: String { "<wsa:EndpointReference><wsa:Address>urn:uuid:\(device.uuid)</wsa:Address></wsa:EndpointReference>" }

    static let hello = "Hello", bye = "Bye"

    /// Hello (§4.1) or Bye (§4.2) to the group on each of `interfaces`.
    private func announce(_ kind: String, on interfaces: [[UInt8]]) {
        guard !interfaces.isEmpty else { return }
        let body = kind == Self.hello
            ? "<d:Hello>\(endpoint)<d:Types>dn:NetworkVideoTransmitter tds:Device</d:Types><d:Scopes>\(SOAP.escape(device.scopes.joined(separator: " ")))</d:Scopes>"
                + "<d:XAddrs>\(SOAP.escape(xaddrs(self.interfaces, false).joined(separator: " ")))</d:XAddrs><d:MetadataVersion>1</d:MetadataVersion></d:Hello>"
            : "<d:Bye>\(endpoint)</d:Bye>"
        let text = message(action: kind, body: body, extraHeader: "", to: "urn:schemas-xmlsoap-org:ws:2005:04:discovery")
        guard let group = SocketAddress(bytes: Self.group, port: Self.defaultPort) else { return }
        for interface in interfaces { link.send(Array(text.utf8), to: group, from: interface) }
    }

    private func message(action: String, body: String, extraHeader: String, to: String) -> String {
        let number = messages.withLock { number -> Int in number += 1; return number }
        let header = "<wsa:MessageID>urn:uuid:\(Self.randomUUID())</wsa:MessageID>\(extraHeader)<wsa:To>\(to)</wsa:To>"
            + "<wsa:Action>\(Self.namespace)/\(action)</wsa:Action><d:AppSequence InstanceId=\"\(instance)\" MessageNumber=\"\(number)\"/>"
        return SOAP.envelope(body, header: header, namespaces: [("wsa", Self.addressing), ("d", Self.namespace),
                                                                ("dn", "http://www.onvif.org/ver10/network/wsdl")])
    }

    /// A random (version 4) UUID, RFC 9562 §5.4.
    public static func randomUUID() -> String {
        var generator = SystemRandomNumberGenerator()
        return uuid((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }, version: 4)
    }

    /// 16 bytes as a UUID of `version` (RFC 9562 §4: its version and variant bits set),
    /// in the 8-4-4-4-12 text form.
    public static func uuid(_ bytes: [UInt8], version: UInt8) -> String {
        var bytes = Array(bytes.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - bytes.count))
        bytes[6] = bytes[6] & 0x0F | version << 4
        bytes[8] = bytes[8] & 0x3F | 0x80
        let characters = Array(bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }
}

/// How many probes may still be answered in the current second (CLOCK_MONOTONIC): time is
/// given, so the rule runs on any clock in tests.
struct AnswerBudget {
    let perSecond: Int
    private var second: Int64 = .min
    private var used = 0

    init(perSecond: Int) { self.perSecond = perSecond }

    /// Whether one more answer fits the second `now` (ns) falls in.
    mutating func allows(now: Int64) -> Bool {
        let current = now / 1_000_000_000
        if current != second { (second, used) = (current, 0) }
        return used < perSecond
    }

    mutating func spend() { used += 1 }
}

/// Answers to each source in the current second (CLOCK_MONOTONIC): at most `perSecond`
/// each. Only sources answered this second are kept, and the global budget bounds those.
struct SourceBudget {
    let perSecond: Int
    private var second: Int64 = .min
    private var used: [[UInt8]: Int] = [:]

    init(perSecond: Int) { self.perSecond = perSecond }

    mutating func allows(_ source: [UInt8], now: Int64) -> Bool {
        let current = now / 1_000_000_000
        if current != second { (second, used) = (current, [:]) }
        return used[source, default: 0] < perSecond
    }

    mutating func spend(_ source: [UInt8]) { used[source, default: 0] += 1 }
}
