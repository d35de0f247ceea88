/// Where an RTMP stream goes: `rtmp://host[:port]/app` or `rtmps://…` (TLS), and the
/// stream key, the stream name after the app, as platforms write them (YouTube's
/// `rtmp://a.rtmp.youtube.com/live2` and a key). The app is the whole path: servers put
/// an instance after a slash (`app/instance`).
public struct RTMPURL: Equatable, Sendable {
    public var secure: Bool
    public var host: String
    public var port: UInt16
    public var app: String

    /// Checked: a scheme onair speaks, a host, a port that is a number in 1…65535, an app.
    /// The error says what is wrong and quotes nothing of the URL: a user may have written
    /// a stream key into it (`rtmp://host/live/KEY`).
    public init(_ text: String) throws {
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("rtmp://") {
            secure = false
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("rtmps://") {
            secure = true
            rest = text.dropFirst(8)
        } else {
            throw RTMPError.malformed("not an rtmp:// or rtmps:// URL")
        }
        guard let slash = rest.firstIndex(of: "/") else { throw RTMPError.malformed("no application after the host (rtmp://host/app)") }
        let authority = rest[..<slash]
        app = String(rest[rest.index(after: slash)...]).trimmingSlashes
        guard !app.isEmpty else { throw RTMPError.malformed("no application after the host (rtmp://host/app)") }
        guard !authority.contains("@") else { throw RTMPError.malformed("a user in the URL is not supported; the key goes in its own setting") }
        var hostPart = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            // An IPv6 literal (RFC 3986 §3.2.2).
            guard let close = authority.firstIndex(of: "]") else { throw RTMPError.malformed("an IPv6 address without its ]") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw RTMPError.malformed("something other than a port after the address")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty, hostPart.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:".contains($0)) }) else {
            throw RTMPError.malformed("the host is not a host name or address (letters, digits, '.', '-')")
        }
        host = String(hostPart)
        if let portText {
            // At most five digits before it becomes a number: a port of 30 digits must not trap.
            guard (1...5).contains(portText.count), portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(portText), (1...65_535).contains(value) else {
                throw RTMPError.malformed("the port is not a number from 1 to 65535")
            }
            port = UInt16(value)
        } else {
            port = secure ? 443 : 1935
        }
    }

    /// connect's tcUrl: the URL up to the app, as the server was asked for it.
    public var tcURL: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        let defaultPort: UInt16 = secure ? 443 : 1935
        return "\(secure ? "rtmps" : "rtmp")://\(shown)\(port == defaultPort ? "" : ":\(port)")/\(app)"
    }
}

extension String {
    fileprivate var trimmingSlashes: String {
        var text = Substring(self)
        while text.hasSuffix("/") { text = text.dropLast() }
        return String(text)
    }
}
