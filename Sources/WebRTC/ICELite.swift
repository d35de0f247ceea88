import STUN
import System

/// Where a datagram came from: an IPv4 (4 bytes) or IPv6 (16 bytes) address and a port.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public var address: [UInt8]
    public var port: UInt16
    public init(address: [UInt8], port: UInt16) {
        self.address = address
        self.port = port
    }
    /// The address as text: `192.168.1.20`, `2001:db8:0:0:0:0:0:1` (groups uncompressed),
    /// as an SDP candidate line carries it.
    public var host: String { SocketAddress.host(address) }

    /// `192.168.1.20:8189`, `[2001:db8:0:0:0:0:0:1]:8189`.
    public var description: String { address.count == 4 ? "\(host):\(port)" : "[\(host)]:\(port)" }
}

/// One side's ICE username fragment and password (RFC 8445 §5.3): at least 4 and 22
/// ice-chars, random, so a guess of another viewer's credentials is hopeless.
public struct ICECredentials: Sendable, Equatable {
    public var ufrag: String
    public var password: String

    public init(ufrag: String, password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    /// ice-char (RFC 8839 §5.4): ALPHA / DIGIT / "+" / "/".
    static let iceChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// 8 and 24 random ice-chars: 48 and 144 bits.
    public static func random() -> ICECredentials {
        var generator = SystemRandomNumberGenerator()
        func text(_ count: Int) -> String { String((0..<count).map { _ in iceChars.randomElement(using: &generator)! }) }
        return ICECredentials(ufrag: text(8), password: text(24))
    }

    /// Credentials as an offer states them: nil unless RFC 8839's lengths and characters.
    public init?(offeredUfrag ufrag: String, password: String) {
        guard (4...256).contains(ufrag.count), (22...256).contains(password.count),
              (ufrag + password).allSatisfy({ Self.iceChars.contains($0) }) else { return nil }
        self.init(ufrag: ufrag, password: password)
    }
}

/// The ICE-lite side of one viewer's session (RFC 8445 §2.5, §7.3): onair never checks
/// connectivity itself; it answers the browser's Binding requests, learns the pair the
/// browser nominates, and keeps the session only while the browser keeps consenting
/// (RFC 7675). Pure: time and addresses are given.
public struct ICELiteSession: Sendable {
    public let local: ICECredentials
    public let remote: ICECredentials
    /// The address the browser nominated (USE-CANDIDATE, §8.2.1): media go there.
    public private(set) var selected: PeerAddress?
    /// CLOCK_MONOTONIC ns of the last authenticated request from the selected pair's
    /// address (any address before one is selected): consent (RFC 7675 §5.1).
    public private(set) var lastConsent: Int64

    /// RFC 7675 §5.1: consent expires 30 s after the last response to a check.
    public static let consentNanoseconds: Int64 = 30_000_000_000

    public init(local: ICECredentials, remote: ICECredentials, started: Int64) {
        self.local = local
        self.remote = remote
        lastConsent = started
    }

    public enum Answer: Sendable, Equatable {
        /// A Binding success response to send back to the same address.
        case reply([UInt8])
        /// An error response to send back (400 or 401, RFC 8489 §6.3.1.1, §9.1.3).
        case error([UInt8], code: Int)
        /// Nothing to send: not a request this session answers (the reason, for the log).
        case ignore(String)
    }

    /// Answers one STUN datagram that came from `address` at `now`.
    public mutating func answer(_ datagram: [UInt8], from address: PeerAddress, now: Int64) -> Answer {
        guard let received = try? STUNMessage.parse(datagram) else { return .ignore("not STUN") }
        return answer(received, from: address, now: now)
    }

    /// The same for a message already parsed (by `localUfrag`, to find this session).
    public mutating func answer(_ received: STUNMessage.Received, from address: PeerAddress, now: Int64) -> Answer {
        let request = received.message
        guard request.method == STUNMessage.binding else { return .ignore("not a Binding") }
        // A Binding indication is the browser's keepalive (RFC 8445 §11): nothing to answer.
        guard request.messageClass == .request else { return .ignore("not a request") }
        // RFC 8445 §7.3: the attributes ICE needs, and a FINGERPRINT that matches.
        guard received.fingerprintMatches(), request.username != nil, received.hasIntegrity, request.priority != nil else {
            return .error(Self.errorResponse(to: request, code: 400, reason: "Bad Request"), code: 400)
        }
        guard request.username == "\(local.ufrag):\(remote.ufrag)", received.integrityMatches(key: Array(local.password.utf8)) else {
            return .error(Self.errorResponse(to: request, code: 401, reason: "Unauthorized"), code: 401)
        }
        if request.useCandidate { selected = address }
        // RFC 7675 §5.1: consent is per candidate pair. Checks on other pairs are answered
        // (the browser may still probe them) but refresh nothing: media go only to the
        // selected pair, so only its checks say the receiver still wants them.
        if selected == nil || selected == address { lastConsent = now }
        let response = STUNMessage(messageClass: .success, transactionID: request.transactionID, attributes: [
            STUNMessage.xorMappedAddress(address: address.address, port: address.port, transactionID: request.transactionID)])
        return .reply(response.serialized(integrityKey: Array(local.password.utf8), fingerprint: true))
    }

    /// Consent has lapsed: no authenticated request for 30 s (RFC 7675 §5.1).
    public func consentExpired(now: Int64) -> Bool { now - lastConsent > Self.consentNanoseconds }

    /// §14.8: ERROR-CODE's class and number, and a reason phrase; with FINGERPRINT, without
    /// MESSAGE-INTEGRITY (the sender did not prove it knows the password).
    static func errorResponse(to request: STUNMessage, code: Int, reason: String) -> [UInt8] {
        let value: [UInt8] = [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(reason.utf8)
        return STUNMessage(messageClass: .error, transactionID: request.transactionID,
                           attributes: [.init(STUNMessage.AttributeType.errorCode, value)]).serialized(fingerprint: true)
    }

    /// The local ufrag a request is for: the part of its USERNAME before the colon
    /// (`<receiver>:<sender>`, RFC 8445 §7.2.2), so one UDP port finds a datagram's
    /// session; the parsed message then goes to that session's `answer`.
    public static func localUfrag(of received: STUNMessage.Received) -> String? {
        guard let username = received.message.username, let colon = username.firstIndex(of: ":") else { return nil }
        return String(username[..<colon])
    }
}

/// What a datagram on the one WebRTC port is, by its first byte (RFC 7983 §7, RFC 9443).
public enum DatagramKind: Sendable, Equatable {
    case stun, dtls, rtp, unknown

    public init(_ datagram: [UInt8]) {
        switch datagram.first {
        case .some(0...3): self = .stun
        case .some(20...63): self = .dtls
        case .some(128...191): self = .rtp
        default: self = .unknown
        }
    }
}
