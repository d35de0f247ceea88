import Basics
import Logging
import System

/// The one door every way of watching passes (the web server, RTSP, ONVIF): the access
/// list, the Digest nonces, the failed-login limit per address and the refusal lines.
/// nil where `[access]` names nobody: the LAN is open.
public final class AccessGate: Sendable {
    public let list: AccessList
    /// The operator's bearer token (`server.token`) lets its holder watch too.
    let token: String?
    let digest: DigestAuthority
    public let limiter: LoginLimiter
    let log: Log
    let refusals = RefusalLog(perMinute: 20)

    public enum Channel: String, Sendable { case http, rtsp, onvif }

    public enum Decision: Equatable, Sendable {
        case allowed(user: String)
        /// No credentials, or right ones on an old nonce: answer 401 with `challenges`.
        case challenge(stale: Bool)
        /// Wrong credentials (logged, and counted against the address): 401 again.
        case refused
        /// Too many failed logins from this address: 429 (RTSP: 503) with Retry-After.
        case throttled(seconds: Int)
    }

    public init(list: AccessList, token: String? = nil, digest: DigestAuthority = DigestAuthority(),
                limiter: LoginLimiter = LoginLimiter(), log: Log) {
        self.list = list
        self.token = token
        self.digest = digest
        self.limiter = limiter
        self.log = log
    }

    /// The Authorization header of a request of `method` on `uri` from `client`.
    /// Digest (both channels), Basic (HTTP: for scripts and Prometheus; the password
    /// crosses the network in the clear) and, on HTTP, the operator's bearer token.
    public func check(_ authorization: String?, method: String, uri: String, client: String, channel: Channel,
                      now: Int64 = KernelClock.monotonic()) -> Decision {
        guard let authorization, !authorization.isEmpty else { return .challenge(stale: false) }
        if let wait = limiter.wait(client, now: now) { return .throttled(seconds: wait) }
        let scheme = authorization.prefix { $0 != " " }.lowercased()
        switch scheme {
        case "digest":
            guard let parameters = DigestAuthority.parameters(authorization) else { return fail("a malformed Digest answer", client: client, channel: channel, now: now) }
            switch digest.verify(parameters, method: method, uri: uri, client: client, qop: channel != .rtsp, list: list, now: now) {
            case .user(let name): return .allowed(user: name)
            case .stale: return .challenge(stale: true)
            case .refused(let reason): return fail(reason, client: client, channel: channel, now: now)
            }
        case "basic" where channel == .http:
            let encoded = authorization.dropFirst(6).trimmingWhitespace()
            guard encoded.utf8.count <= 1024, let decoded = Base64.decode(encoded),
                  let colon = decoded.firstIndex(of: 0x3A) else { return fail("a malformed Basic answer", client: client, channel: channel, now: now) }
            let name = String(decoding: decoded[..<colon], as: UTF8.self)
            let password = String(decoding: decoded[(colon + 1)...], as: UTF8.self)
            return list.accepts(name, password: password) ? .allowed(user: name)
                : fail("a wrong password for \(name.prefix(32))", client: client, channel: channel, now: now)
        case "bearer" where channel == .http:
            guard let token, AccessList.constantTimeEqual(Array(authorization.utf8), Array("Bearer \(token)".utf8)) else {
                return fail("a wrong bearer token", client: client, channel: channel, now: now)
            }
            return .allowed(user: "operator")
        default:
            return fail("the \(scheme.prefix(16)) scheme (Digest is asked for)", client: client, channel: channel, now: now)
        }
    }

    /// The WWW-Authenticate values for a 401 to `client` (its nonce is good from its
    /// address alone): SHA-256 then MD5 with qop over HTTP
    /// (browsers, curl, ffmpeg's HLS), MD5 alone in RFC 2069's form over RTSP.
    public func challenges(_ channel: Channel, stale: Bool, client: String, now: Int64 = KernelClock.monotonic()) -> [String] {
        channel == .rtsp ? digest.challenges(realm: list.realm, algorithms: [.md5], qop: false, stale: stale, client: client, now: now)
            : digest.challenges(realm: list.realm, algorithms: [.sha256, .md5], qop: true, stale: stale, client: client, now: now)
    }

    /// A refused login: one line (at most 20 a minute), and a failure against the address.
    public func fail(_ reason: String, client: String, channel: Channel, now: Int64 = KernelClock.monotonic()) -> Decision {
        limiter.failed(client, now: now)
        refusals.emit(.accessRefused, to: log, [("channel", channel.rawValue), ("client", client), ("reason", reason)], now: now)
        return .refused
    }
}

extension Event {
    public static let accessRefused = Event("access.refused")
    /// Once at start: who may watch (or that anyone on the network may).
    public static let accessOpen = Event("access.open", console: true)
    public static let accessUsers = Event("access.users", console: true)
}
