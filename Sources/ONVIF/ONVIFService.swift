import Access
import Basics
import COpenSSL
import Logging
import System
import Threading

/// ONVIF Profile S, minimal and correct: the Device service (`/onvif/device_service`) and
/// the Media service (`/onvif/media_service`) over SOAP 1.2, on the web server's port.
/// What the board is comes from `ONVIFDevice`; the stream, the clock and the interfaces
/// are read at each request. With viewer users set, every operation but those a client
/// needs before it can authenticate (ONVIF Core §5.9.4.3's pre-auth class: the time, the
/// capabilities, the services) wants a WS-Security UsernameToken.
public final class ONVIFService: Sendable {
    public static let devicePath = "/onvif/device_service"
    public static let mediaPath = "/onvif/media_service"
    public static let paths = [devicePath, mediaPath]
    /// A SOAP request is a few kilobytes; anything past this is refused before it is read.
    public static let maximumRequest = XMLReader.byteLimit

    public struct Environment: Sendable {
        public var live: @Sendable () -> ONVIFStream?
        public var clock: @Sendable () -> ONVIFClock
        public var interfaces: @Sendable () -> [ONVIFInterface]
        /// The RTSP port (nil: RTSP is off, and GetStreamUri says so) and the snapshot's path.
        public var rtspPort: UInt16?
        public var snapshotPath: String?
        /// Who may watch; nil: anyone (no UsernameToken is checked).
        public var access: AccessGate?

        public init(live: @escaping @Sendable () -> ONVIFStream?, clock: @escaping @Sendable () -> ONVIFClock,
                    interfaces: @escaping @Sendable () -> [ONVIFInterface], rtspPort: UInt16?, snapshotPath: String?,
                    access: AccessGate? = nil) {
            self.live = live
            self.clock = clock
            self.interfaces = interfaces
            self.rtspPort = rtspPort
            self.snapshotPath = snapshotPath
            self.access = access
        }
    }

    public let device: ONVIFDevice
    let environment: Environment
    let log: Log
    let refusals = RefusalLog(perMinute: 20)
    /// Nonces of accepted digests, so one cannot be replayed, across restarts too.
    private let nonces: UsedNonces

    /// `nonceFile`: where the nonces taken are kept across restarts (nil: in memory only).
    public init(device: ONVIFDevice, environment: Environment, nonceFile: String? = nil, log: Log) {
        self.device = device
        self.environment = environment
        self.log = log
        nonces = UsedNonces(path: nonceFile)
    }

    /// How far a digest's Created may be from the board's clock, when that is synchronised
    /// (ONVIF Core §5.12.2 leaves the window to the device; five minutes is WS-Security's
    /// usual allowance for clocks that drift).
    static let createdWindowMs: Int64 = 5 * 60_000

    /// The answer to a POST on `path`: an HTTP status and the SOAP envelope. `host` is the
    /// request's Host header (the address the client reached the board at, which the URIs
    /// it is given must use), `port` the web server's.
    public func respond(path: String, body: [UInt8], host: String?, port: UInt16, client: String) -> (status: Int, xml: String) {
        let request: SOAP.Request
        do { request = try SOAP.parse(body) } catch {
            return refuse(.wellFormed("\(error)"), client: client)
        }
        let operation = request.operation
        let service = path == Self.mediaPath ? "media" : "device"
        let name = operation.name
        if let access = environment.access, !Self.preAuthentication.contains(name) {
            if let problem = authenticate(request.token, access: access, client: client) { return refuse(.notAuthorized(problem), client: client) }
        }
        let address = Address(host: Self.hostName(host), httpPort: port, rtspPort: environment.rtspPort)
        let answer: String?
        if service == "device" && operation.namespace == Self.deviceNamespace {
            answer = deviceOperation(name, operation, address: address)
        } else if service == "media" && operation.namespace == Self.mediaNamespace {
            answer = mediaOperation(name, operation, address: address)
        } else {
            answer = nil
        }
        guard let answer else { return refuse(.actionNotSupported(name), client: client) }
        return (200, SOAP.envelope(answer))
    }

    static let deviceNamespace = "http://www.onvif.org/ver10/device/wsdl"
    static let mediaNamespace = "http://www.onvif.org/ver10/media/wsdl"
    /// What a client may ask before it has credentials (ONVIF Core §5.9.4.3 PRE_AUTH).
    static let preAuthentication: Set<String> = ["GetSystemDateAndTime", "GetCapabilities", "GetServices", "GetServiceCapabilities"]

    /// Where the client reached the board: the URIs it is given point there.
    struct Address {
        var host: String
        var httpPort: UInt16
        var rtspPort: UInt16?
        var http: String { "http://\(host):\(httpPort)" }
    }

    /// The host part of a Host header (`[::1]:8080` → `[::1]`); a missing or odd one is
    /// the loopback address, which at least names this device.
    static func hostName(_ header: String?) -> String {
        guard let header, !header.isEmpty, header.count <= 255,
              header.allSatisfy({ $0.isLetter || $0.isNumber || ".-:[]".contains($0) }), header.allSatisfy(\.isASCII) else { return "127.0.0.1" }
        if header.hasPrefix("["), let end = header.firstIndex(of: "]") { return String(header[...end]) }
        return String(header.split(separator: ":", maxSplits: 1).first ?? "127.0.0.1")
    }

    /// Why a token is refused, or nil when it is good: a known user, the password (or the
    /// digest of nonce, creation time and password, OASIS UsernameToken Profile §3.1), a
    /// nonce not seen before (in this run or an earlier one), and — when the board's clock
    /// is synchronised — a creation time within five minutes of it; an unsynchronised clock
    /// cannot judge one. PasswordDigest needs the secret itself, which only
    /// device accounts keep (`AccessList`); a viewer can send PasswordText. Wrong
    /// credentials count against the client's address, as over HTTP and RTSP.
    func authenticate(_ token: UsernameToken?, access: AccessGate, client: String, now: Int64 = KernelClock.monotonic()) -> String? {
        if let wait = access.limiter.wait(client, now: now) { return "too many failed logins from this address (again in \(wait) s)" }
        guard let token else { return "no WS-Security UsernameToken" }
        let name = token.username.prefix(32)
        let problem: String?
        if token.isDigest {
            if let secret = access.list.secret(token.username) {
                if token.nonce.isEmpty || token.nonce.count > 64 {
                    problem = "a PasswordDigest without a nonce"
                } else if !AccessList.constantTimeEqual(Self.digest(nonce: token.nonce, created: token.created, password: secret), Base64.decode(token.password) ?? []) {
                    problem = "a wrong password for \(name)"
                } else if let stale = Self.createdProblem(token.created, clock: environment.clock()) {
                    problem = stale
                } else {
                    problem = nonces.first(token.nonce) ? nil : "a nonce used before (a replayed request)"
                }
            } else if access.list.viewers.contains(where: { $0.name == token.username }) {
                problem = "a PasswordDigest for viewer \(name), whose password is not kept: give the NVR a device account (onair passwd --device) or PasswordText"
            } else {
                problem = "no user \(name)"
            }
        } else {
            problem = access.list.accepts(token.username, password: token.password) ? nil : "a wrong password for \(name) (or no such user)"
        }
        if problem != nil { access.limiter.failed(client, now: now) }
        return problem
    }

    /// Why a digest's Created is not taken, on a synchronised clock: not a date, or
    /// further than the window from the board's time; nil when it is taken.
    static func createdProblem(_ created: String, clock: ONVIFClock) -> String? {
        guard clock.synchronized else { return nil }
        guard let time = UTCDate.parse(created) else { return "a Created time that is not a date (\(created.prefix(40)))" }
        guard abs(time - clock.unixMilliseconds) <= createdWindowMs else {
            return "a Created time \(created.prefix(40)) more than 5 minutes from the board's clock (a replayed request, or a client clock that is off)"
        }
        return nil
    }

    /// SHA-1(nonce + created + password).
    static func digest(nonce: [UInt8], created: String, password: String) -> [UInt8] {
        let input = nonce + Array(created.utf8) + Array(password.utf8)
        var out = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        _ = input.withUnsafeBytes { bytes in EVP_Digest(bytes.baseAddress, bytes.count, &out, &length, EVP_sha1(), nil) }
        return out
    }

    /// A fault, and one line about it (at most 20 a minute).
    func refuse(_ fault: SOAP.Fault, client: String) -> (status: Int, xml: String) {
        refusals.emit(.onvifRefused, to: log, [("client", client), ("fault", fault.subcodes.last ?? fault.code), ("reason", fault.reason)])
        return (fault.httpStatus, fault.xml)
    }
}

extension Event {
    public static let onvifRefused = Event("onvif.refused")
    public static let discoveryListening = Event("onvif.discovery")
    public static let discoveryRefused = Event("onvif.discovery_refused")
}
