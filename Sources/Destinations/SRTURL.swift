/// Where an SRT destination calls: `srt://host:port`, with the options receivers and
/// platforms put in its query, as libsrt's own URI syntax names them (`streamid`,
/// `passphrase`, `latency` in milliseconds); or, with `mode=listener`, where it waits for
/// a studio to call it and pull the stream (`srt://:9000?mode=listener`: any address). An error says what is wrong and quotes
/// nothing of the URL, which may hold a passphrase.
public struct SRTURL: Equatable, Sendable {
    public var host: String
    public var port: UInt16
    public var streamID: String?
    public var passphrase: String?
    /// libsrt's default for live mode.
    public var latencyMs = 120
    /// Waits for a caller instead of calling.
    public var listener = false

    static func names(_ text: String) -> Bool { text.lowercased().hasPrefix("srt://") }

    public init(_ text: String) throws(SRTURLError) {
        guard Self.names(text) else { throw SRTURLError("not an srt:// URL") }
        let rest = text.dropFirst(6)
        let authority = rest.prefix { $0 != "?" && $0 != "/" }
        var hostPart = authority
        var portText: Substring = ""
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw SRTURLError("an IPv6 address without its ]") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        // A listener's host may be empty: every address.
        guard hostPart.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:".contains($0)) }) else {
            throw SRTURLError("the host is not a host name or address (letters, digits, '.', '-')")
        }
        // SRT has no default port: the URL names it.
        guard (1...5).contains(portText.count), portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portText),
              (1...65_535).contains(port) else {
            throw SRTURLError("no port from 1 to 65535 after the host (srt://host:port)")
        }
        host = String(hostPart)
        self.port = UInt16(port)
        guard let query = rest.firstIndex(of: "?") else {
            guard !host.isEmpty else { throw SRTURLError("no host to call (srt://host:port, or mode=listener)") }
            return
        }
        for pair in rest[rest.index(after: query)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]), value = parts.count > 1 ? Self.percentDecoded(parts[1]) : ""
            switch name {
            case "streamid": streamID = value
            case "passphrase": passphrase = value
            case "latency":
                guard (1...5).contains(value.count), let ms = Int(value), (20...8000).contains(ms) else {
                    throw SRTURLError("latency is milliseconds from 20 to 8000")
                }
                latencyMs = ms
            case "mode":
                guard value == "caller" || value == "listener" else { throw SRTURLError("mode is caller or listener") }
                listener = value == "listener"
            default:
                throw SRTURLError("an option onair does not take (it takes streamid, passphrase, latency, mode)")
            }
        }
        guard listener || !host.isEmpty else { throw SRTURLError("no host to call (srt://host:port, or mode=listener)") }
    }

    /// `%XX` as its byte; anything else as it is (RFC 3986 §2.1).
    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == 0x25, let high = utf8.index(index, offsetBy: 1, limitedBy: utf8.endIndex), high < utf8.endIndex,
               let low = utf8.index(index, offsetBy: 2, limitedBy: utf8.endIndex), low < utf8.endIndex,
               let value = UInt8(String(decoding: [utf8[high], utf8[low]], as: UTF8.self), radix: 16) {
                bytes.append(value)
                index = utf8.index(index, offsetBy: 3)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What the log shows: the host and port, never the options.
    public var shown: String {
        (host.contains(":") ? "srt://[\(host)]:\(port)" : "srt://\(host):\(port)") + (listener ? " (listening)" : "")
    }
}

public struct SRTURLError: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}
