import COpenSSL
import System
import Threading

/// HTTP Digest (RFC 7616; RFC 2617 for RTSP, §3.2 there), checked from the stored
/// H(user:realm:password). A nonce is the time it was made and an HMAC of that time and
/// the client's address (its /64 for IPv6) under a key this process made, so any thread
/// can check one; one older than `lifetime`, or made for another address, is answered
/// `stale=true`, which browsers and ffmpeg retry at once without asking anyone. With qop
/// (HTTP), each nonce's counts are remembered (RFC 7616 §3.4.5), so a captured answer
/// is never taken twice; RTSP's clients answer in RFC 2069's form, without a count, so
/// there a captured answer works again only from the same address while its nonce lives.
public struct DigestAuthority: Sendable {
    let key: [UInt8]
    /// Nanoseconds a nonce is good for.
    let lifetime: Int64
    let counts: NonceCounts

    public init(lifetimeSeconds: Int64 = 600) {
        var generator = SystemRandomNumberGenerator()
        key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        lifetime = lifetimeSeconds * 1_000_000_000
        counts = NonceCounts(capacity: 4096)
    }

    /// A nonce for now and `client`: 16 hex digits of the monotonic time in seconds, 16 of
    /// a random number (two clients behind one address, challenged in the same second, get
    /// nonces of their own, and so counts of their own), 32 of the MAC.
    func nonce(now: Int64, client: String) -> String {
        let seconds = UInt64(max(0, now / 1_000_000_000))
        var generator = SystemRandomNumberGenerator()
        let stamp = (0..<8).map { UInt8(truncatingIfNeeded: seconds >> (56 - 8 * UInt64($0))) } + (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return AccessList.hex(stamp) + AccessList.hex(mac(stamp, client: client))
    }

    private func mac(_ stamp: [UInt8], client: String) -> [UInt8] {
        let data = stamp + SocketAddress.clientGroup(client)
        var out = [UInt8](repeating: 0, count: 20)
        _ = key.withUnsafeBytes { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { onair_hmac_sha1(k.baseAddress, Int32(k.count), d.baseAddress, d.count, $0.baseAddress) }
            }
        }
        return Array(out.prefix(16))
    }

    /// `stale`: too old, or not made for this client's address (it cannot tell a forged
    /// nonce from another address's: both are challenged again, neither is let in).
    enum NonceState: Equatable { case fresh(seconds: UInt64), stale, malformed }

    func check(nonce: String, client: String, now: Int64) -> NonceState {
        guard nonce.utf8.count == 64, let bytes = AccessList.unhex(nonce) else { return .malformed }
        let stamp = Array(bytes[0..<16])
        guard AccessList.constantTimeEqual(mac(stamp, client: client), Array(bytes[16...])) else { return .stale }
        let seconds = stamp[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard seconds <= UInt64(Int64.max / 1_000_000_000) else { return .malformed }
        let age = now - Int64(seconds) * 1_000_000_000
        return age >= -1_000_000_000 && age <= lifetime ? .fresh(seconds: seconds) : .stale
    }

    /// The `WWW-Authenticate` values, most preferred first (RFC 7616 §3.7). With `qop`
    /// (HTTP) the client's nonce and count go into the response; RTSP's clients implement
    /// RFC 2069's form (GStreamer sends no qop), so RTSP offers MD5 without it.
    public func challenges(realm: String, algorithms: [DigestAlgorithm], qop: Bool, stale: Bool, client: String, now: Int64) -> [String] {
        let nonce = nonce(now: now, client: client)
        return algorithms.map { algorithm in
            "Digest realm=\"\(realm)\"" + (qop ? ", qop=\"auth\"" : "") + ", algorithm=\(algorithm.rawValue), nonce=\"\(nonce)\""
                + (stale ? ", stale=true" : "")
        }
    }

    public enum Outcome: Equatable {
        case user(String)
        /// Right credentials on an old nonce: challenge again with `stale=true`.
        case stale
        /// Wrong: why, in words (never the password, nor the response).
        case refused(String)
    }

    /// Checks an `Authorization: Digest …` value's parameters for a request of `method`
    /// on `uri` (the request target as the request line gave it) from `client`; `qop`:
    /// whether the answer must carry a count (HTTP's clients all do; RTSP's may not).
    func verify(_ parameters: [String: String], method: String, uri: String, client: String, qop required: Bool, list: AccessList,
                now: Int64) -> Outcome {
        guard let name = parameters["username"], let realm = parameters["realm"], let nonce = parameters["nonce"],
              let digestURI = parameters["uri"], let response = parameters["response"] else {
            return .refused("a Digest answer without username, realm, nonce, uri or response")
        }
        guard realm == list.realm else { return .refused("a Digest answer for another realm") }
        let algorithmName = parameters["algorithm"] ?? "MD5"
        guard let algorithm = DigestAlgorithm(rawValue: algorithmName.uppercased()) else { return .refused("Digest algorithm \(algorithmName.prefix(20)) (MD5 and SHA-256 are known)") }
        guard Self.sameResource(digestURI, uri) else { return .refused("a Digest answer for another URI") }
        let nonceState = check(nonce: nonce, client: client, now: now)
        guard nonceState != .malformed else { return .refused("a nonce this board did not make") }
        guard let stored = list.storedDigest(name, algorithm) else { return .refused("no user \(name.prefix(32))") }
        var counted: (count: String, clientNonce: String)?
        if let qop = parameters["qop"] {
            guard qop == "auth", let count = parameters["nc"], count.utf8.count == 8, AccessList.unhex(count) != nil,
                  let clientNonce = parameters["cnonce"], !clientNonce.isEmpty else { return .refused("a Digest answer with a bad qop, nc or cnonce") }
            counted = (count, clientNonce)
        } else if required {
            return .refused("a Digest answer without qop (RFC 2069's form is taken over RTSP only)")
        }
        let expected = Self.response(stored: stored, nonce: nonce, counted: counted, method: method, uri: digestURI, algorithm)
        guard let given = AccessList.unhex(response), AccessList.constantTimeEqual(given, expected) else {
            return .refused("a wrong password for \(name.prefix(32))")
        }
        guard case .fresh(let made) = nonceState else { return .stale }
        // A count used before on this nonce is a replayed answer: challenged again.
        if let counted, let count = UInt32(counted.count, radix: 16), !counts.first(count, nonce: nonce, made: made, now: now, lifetime: lifetime) {
            return .stale
        }
        return .user(name)
    }

    /// RFC 7616 §3.4.1: H(hex(H(A1)):nonce:nc:cnonce:auth:hex(H(method:uri))) with qop,
    /// RFC 2069's H(hex(H(A1)):nonce:hex(H(method:uri))) without.
    static func response(stored: [UInt8], nonce: String, counted: (count: String, clientNonce: String)?, method: String, uri: String,
                         _ algorithm: DigestAlgorithm) -> [UInt8] {
        let ha2 = AccessList.hex(AccessList.hash(Array("\(method):\(uri)".utf8), algorithm))
        let middle = counted.map { "\($0.count):\($0.clientNonce):auth:" } ?? ""
        return AccessList.hash(Array("\(AccessList.hex(stored)):\(nonce):\(middle)\(ha2)".utf8), algorithm)
    }

    /// The digest's URI names the request's resource: the same text, or the same path
    /// (a client may give the absolute form, `rtsp://host/live`, or drop the query).
    static func sameResource(_ a: String, _ b: String) -> Bool {
        a == b || path(a) == path(b)
    }

    static func path(_ uri: String) -> Substring {
        var rest = Substring(uri)
        if let scheme = rest.firstRange(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest[(rest.firstIndex(of: "/") ?? rest.endIndex)...]
        }
        if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
        while rest.count > 1 && rest.hasSuffix("/") { rest = rest.dropLast() }
        return rest
    }

    /// `Digest username="a", realm="b", nc=00000001, …` → its parameters (RFC 7616
    /// §3.4; RFC 9110 §11.2's auth-param: token = token / quoted-string). nil for
    /// anything else, a repeated name, or more than 4 KiB.
    static func parameters(_ header: String) -> [String: String]? {
        let bytes = Array(header.utf8)
        guard bytes.count <= 4096 else { return nil }
        var index = 0
        func skipSpace() { while index < bytes.count && (bytes[index] == 0x20 || bytes[index] == 0x09) { index += 1 } }
        func token() -> String {
            let start = index
            while index < bytes.count, bytes[index] > 0x20, bytes[index] < 0x7F, !"=,\"".utf8.contains(bytes[index]) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        skipSpace()
        guard token().lowercased() == "digest" else { return nil }
        var result: [String: String] = [:]
        while true {
            skipSpace()
            while index < bytes.count && bytes[index] == 0x2C { index += 1; skipSpace() }
            if index == bytes.count { break }
            let name = token().lowercased()
            skipSpace()
            guard !name.isEmpty, index < bytes.count, bytes[index] == 0x3D else { return nil }
            index += 1
            skipSpace()
            var value: [UInt8] = []
            if index < bytes.count && bytes[index] == 0x22 {
                index += 1
                var closed = false
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    if byte == 0x22 { closed = true; break }
                    if byte == 0x5C, index < bytes.count { value.append(bytes[index]); index += 1; continue }
                    value.append(byte)
                }
                guard closed else { return nil }
            } else {
                value = Array(token().utf8)
            }
            guard result[name] == nil else { return nil }
            result[name] = String(decoding: value, as: UTF8.self)
            skipSpace()
            guard index == bytes.count || bytes[index] == 0x2C else { return nil }
        }
        return result
    }
}

/// The counts used on each nonce (RFC 7616 §3.4.5: a server may refuse a count it has
/// seen): the highest and a window of the 64 below it, as SRTP keeps its replay list
/// (RFC 3711 §3.3.2), so a browser's parallel requests may come in any order. At most
/// `capacity` nonces are kept, the oldest made going first; a nonce made at or before the
/// newest one dropped is stale from then on (its client is challenged for a new one), so
/// forgetting never lets a count be taken twice.
final class NonceCounts: Sendable {
    private struct Seen { var highest: UInt32; var window: UInt64; var made: UInt64 }
    private let state = Locked<(seen: [String: Seen], forgottenUpTo: UInt64)>(([:], 0))
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Whether `count` is used for the first time on `nonce` (made at `made`, seconds);
    /// then it is remembered.
    func first(_ count: UInt32, nonce: String, made: UInt64, now: Int64, lifetime: Int64) -> Bool {
        state.withLock { state -> Bool in
            guard var seen = state.seen[nonce] else {
                guard made > state.forgottenUpTo else { return false }
                if state.seen.count >= capacity { forget(&state, now: now, lifetime: lifetime) }
                state.seen[nonce] = Seen(highest: count, window: 1, made: made)
                return true
            }
            if count > seen.highest {
                let shift = UInt64(count - seen.highest)
                seen.window = shift >= 64 ? 1 : seen.window << shift | 1
                seen.highest = count
            } else {
                let behind = UInt64(seen.highest - count)
                guard behind < 64, seen.window & (1 << behind) == 0 else { return false }
                seen.window |= 1 << behind
            }
            state.seen[nonce] = seen
            return true
        }
    }

    /// Nonces past their lifetime go; if none has, the oldest made.
    private func forget(_ state: inout (seen: [String: Seen], forgottenUpTo: UInt64), now: Int64, lifetime: Int64) {
        // One past its lifetime is stale before its counts are asked for: it may go.
        let expired = UInt64(max(0, (now - lifetime) / 1_000_000_000))
        state.seen = state.seen.filter { $0.value.made > expired }
        if state.seen.count >= capacity, let oldest = state.seen.min(by: { $0.value.made < $1.value.made }) {
            state.seen[oldest.key] = nil
            state.forgottenUpTo = max(state.forgottenUpTo, oldest.value.made)
        }
    }
}
