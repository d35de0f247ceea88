import Basics

/// A session description (RFC 8866) as WebRTC and RTSP use it: the session's lines and
/// one section per `m=` line, attributes kept in order. Parsing is bounded (size, lines,
/// media sections) and line-oriented, so an offer from anyone costs little; it keeps the
/// session's lines and every attribute (a media section's other lines, `c=` and `b=`, say
/// nothing WebRTC or RTSP uses), and says in one line what made a text not SDP.
public struct SessionDescription: Sendable, Equatable {
    public struct Attribute: Sendable, Equatable {
        public var name: String
        /// nil for a property attribute (`a=rtcp-mux`).
        public var value: String?
        public init(_ name: String, _ value: String? = nil) {
            self.name = name
            self.value = value
        }
    }

    /// An rtpmap's encoding name, clock rate and channels (RFC 8866 §6.6).
    public typealias RTPMap = (encoding: String, clockRate: Int, channels: Int?)

    /// A media section's rtpmap and fmtp attributes by payload type; the first of each
    /// payload type counts, as RFC 8866 §6.6 allows only one.
    public struct PayloadTypes: Sendable {
        private var rtpmaps: [Substring: String] = [:]
        private var fmtps: [Substring: String] = [:]

        init(_ media: Media) {
            for attribute in media.attributes {
                guard let value = attribute.value, attribute.name == "rtpmap" || attribute.name == "fmtp", let key = Self.key(value) else { continue }
                if attribute.name == "rtpmap" {
                    if rtpmaps[key] == nil { rtpmaps[key] = value }
                } else if fmtps[key] == nil {
                    fmtps[key] = value
                }
            }
        }

        public func rtpmap(_ payloadType: String) -> RTPMap? { Self.rtpmap(rtpmaps[payloadType[...]]) }
        public func fmtp(_ payloadType: String) -> [String: String] { Self.fmtp(fmtps[payloadType[...]]) }

        /// The payload type an rtpmap or fmtp value is about: the text before its space.
        static func key(_ value: String) -> Substring? {
            guard let space = value.firstIndex(of: " ") else { return nil }
            return value[..<space]
        }

        static func rtpmap(_ value: String?) -> RTPMap? {
            guard let value, let space = value.firstIndex(of: " ") else { return nil }
            let fields = value[value.index(after: space)...].split(separator: "/")
            guard fields.count >= 2, let clock = Int(fields[1]), clock > 0, clock <= 1_000_000 else { return nil }
            return (String(fields[0]), clock, fields.count > 2 ? Int(fields[2]) : nil)
        }

        static func fmtp(_ value: String?) -> [String: String] {
            guard let value, let space = value.firstIndex(of: " ") else { return [:] }
            var parameters: [String: String] = [:]
            for pair in value[value.index(after: space)...].split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard let key = kv.first?.trimmingWhitespace(), !key.isEmpty else { continue }
                parameters[key.lowercased()] = kv.count > 1 ? kv[1].trimmingWhitespace() : ""
            }
            return parameters
        }
    }

    public struct Media: Sendable, Equatable {
        /// `video`, `audio`, `application`.
        public var kind: String
        public var port: Int
        /// `UDP/TLS/RTP/SAVPF` for WebRTC, `RTP/AVP` for RTSP.
        public var proto: String
        /// The payload types (or other formats) of the `m=` line, in preference order.
        public var formats: [String]
        public var attributes: [Attribute] = []

        public init(kind: String, port: Int, proto: String, formats: [String], attributes: [Attribute] = []) {
            self.kind = kind
            self.port = port
            self.proto = proto
            self.formats = formats
            self.attributes = attributes
        }

        public func values(_ name: String) -> [String] { attributes.filter { $0.name == name }.compactMap(\.value) }
        public func value(_ name: String) -> String? { values(name).first }
        public func has(_ name: String) -> Bool { attributes.contains { $0.name == name } }

        /// `a=rtpmap:<pt> <encoding>/<clock>[/<channels>]` (RFC 8866 §6.6), by payload type.
        /// One pass over the attributes: to ask of every format, use `payloadTypes`.
        public func rtpmap(_ payloadType: String) -> RTPMap? {
            PayloadTypes.rtpmap(values("rtpmap").first { PayloadTypes.key($0) == payloadType[...] })
        }

        /// `a=fmtp:<pt> k=v;k=v` as a dictionary (keys lower-cased). One pass, as `rtpmap`.
        public func fmtp(_ payloadType: String) -> [String: String] {
            PayloadTypes.fmtp(values("fmtp").first { PayloadTypes.key($0) == payloadType[...] })
        }

        /// Every payload type's rtpmap and fmtp, indexed in one pass over the attributes,
        /// so asking of each of the m-line's formats costs formats + attributes, not their
        /// product (an offer of 16,000 formats and 2,000 rtpmaps must not cost seconds).
        public var payloadTypes: PayloadTypes { PayloadTypes(self) }

        /// `a=extmap:<id>[/direction] <uri>` (RFC 8285 §8), by URI.
        public func extensionID(_ uri: String) -> Int? {
            for value in values("extmap") {
                let parts = value.split(separator: " ")
                guard parts.count >= 2, parts[1] == uri, let id = Int(parts[0].split(separator: "/")[0]), (1...255).contains(id) else { continue }
                return id
            }
            return nil
        }

        /// sendrecv, sendonly, recvonly or inactive (RFC 8866 §6.7); sendrecv when unsaid.
        public var direction: String {
            attributes.map(\.name).last { ["sendrecv", "sendonly", "recvonly", "inactive"].contains($0) } ?? "sendrecv"
        }
    }

    /// Lines before the first `m=`, in order, as `(type, value)` (`v`, `o`, `s`, `t`, …);
    /// the session's attributes are in `attributes`.
    public var sessionLines: [(type: Character, value: String)]
    public var attributes: [Attribute]
    public var media: [Media]

    public static func == (a: SessionDescription, b: SessionDescription) -> Bool {
        a.attributes == b.attributes && a.media == b.media && a.sessionLines.map(\.type) == b.sessionLines.map(\.type)
            && a.sessionLines.map(\.value) == b.sessionLines.map(\.value)
    }

    public func value(_ name: String) -> String? { attributes.first { $0.name == name }?.value }

    /// An attribute of a media section, or of the session when the section has none
    /// (RFC 8839 §5.4: ice-ufrag, ice-pwd and fingerprint may be at either level).
    public func value(_ name: String, in media: Media) -> String? { media.value(name) ?? value(name) }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case tooLarge(Int)
        case tooManyLines
        case tooManyMedia
        case tooManyFormats(line: Int)
        case notSDP(line: Int)
        case badMedia(line: Int)

        public var description: String {
            switch self {
            case .tooLarge(let size): return "SDP of \(size) bytes; at most \(SessionDescription.sizeLimit)"
            case .tooManyLines: return "SDP of more than \(SessionDescription.lineLimit) lines"
            case .tooManyMedia: return "SDP with more than \(SessionDescription.mediaLimit) media sections"
            case .tooManyFormats(let line): return "SDP line \(line): an m= line of more than \(SessionDescription.formatLimit) formats"
            case .notSDP(let line): return "SDP line \(line) is not <type>=<value>"
            case .badMedia(let line): return "SDP line \(line): an m= line needs <media> <port> <proto> <formats>"
            }
        }
    }

    /// A browser's offer is a few kilobytes; these bounds are far above any honest one.
    public static let sizeLimit = 64 << 10
    public static let lineLimit = 2000
    public static let mediaLimit = 16
    /// RTP has 128 payload types (RFC 3550 §5.1), so no m= line lists more formats.
    public static let formatLimit = 128

    public init(sessionLines: [(type: Character, value: String)], attributes: [Attribute], media: [Media]) {
        self.sessionLines = sessionLines
        self.attributes = attributes
        self.media = media
    }

    public init(parsing text: String) throws {
        guard text.utf8.count <= Self.sizeLimit else { throw ParseError.tooLarge(text.utf8.count) }
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
        guard lines.count <= Self.lineLimit else { throw ParseError.tooManyLines }
        sessionLines = []
        attributes = []
        media = []
        for (index, line) in lines.enumerated() {
            let number = index + 1
            let bytes = Array(line.utf8)
            guard bytes.count >= 2, bytes[1] == UInt8(ascii: "="), let type = line.first, type.isASCII, type.isLetter else {
                throw ParseError.notSDP(line: number)
            }
            let value = String(line.dropFirst(2))
            switch type {
            case "m":
                let fields = value.split(separator: " ")
                guard fields.count >= 4, let port = Int(fields[1].split(separator: "/")[0]), (0...65_535).contains(port) else {
                    throw ParseError.badMedia(line: number)
                }
                guard media.count < Self.mediaLimit else { throw ParseError.tooManyMedia }
                guard fields.count - 3 <= Self.formatLimit else { throw ParseError.tooManyFormats(line: number) }
                media.append(Media(kind: String(fields[0]), port: port, proto: String(fields[2]), formats: fields[3...].map(String.init)))
            case "a":
                let attribute: Attribute
                if let colon = value.firstIndex(of: ":") {
                    attribute = Attribute(String(value[..<colon]), String(value[value.index(after: colon)...]))
                } else {
                    attribute = Attribute(value)
                }
                if media.isEmpty { attributes.append(attribute) } else { media[media.count - 1].attributes.append(attribute) }
            default:
                if media.isEmpty { sessionLines.append((type, value)) }
            }
        }
    }

    /// The text, CRLF after every line (RFC 8866 §5).
    public var text: String {
        var lines = sessionLines.map { "\($0.type)=\($0.value)" }
        lines += attributes.map(Self.line)
        for section in media {
            lines.append("m=\(section.kind) \(section.port) \(section.proto) \(section.formats.joined(separator: " "))")
            lines += section.attributes.map(Self.line)
        }
        return lines.map { $0 + "\r\n" }.joined()
    }

    private static func line(_ attribute: Attribute) -> String {
        "a=\(attribute.name)" + (attribute.value.map { ":\($0)" } ?? "")
    }
}
