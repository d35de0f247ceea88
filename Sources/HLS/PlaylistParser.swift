/// A playlist read back from its text: every tag with its line number, and the segments
/// or variants it lists. Lenient by design: the checker reports what is wrong.
public struct ParsedPlaylist: Sendable {
    public struct Tag: Sendable {
        public var name: String       // e.g. "EXT-X-TARGETDURATION"
        public var value: String?     // what follows the colon
        public var line: Int
    }
    public struct Segment: Sendable {
        public var uri: String
        public var line: Int
        public var extinf: String?
        public var extinfCount: Int
        public var programDateTime: String?
        public var discontinuity: Bool
        public var map: String?       // the EXT-X-MAP URI in force

        public var byteRange: String? // EXT-X-BYTERANGE value, if any

        /// EXTINF's duration, only if it is a decimal number of seconds (§4.4.4.1).
        public var duration: Double? {
            extinf.flatMap { HLSValue.duration($0.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)[0]) }
        }
    }
    public struct Variant: Sendable {
        public var attributes: [String: String]
        public var uri: String
        public var line: Int          // of its EXT-X-STREAM-INF tag
    }

    public var text: String
    public var lines: [String]
    public var tags: [Tag] = []
    public var segments: [Segment] = []
    public var variants: [Variant] = []
    /// `EXT-X-I-FRAME-STREAM-INF` tags, their URI attribute as `uri` ("" when missing).
    public var iFrameStreams: [Variant] = []
    public var danglingTags: [Tag] = []   // segment tags with no URI after them

    /// Worked out once while parsing: the checker asks per segment, and a search of every
    /// tag each time made a 100,000-segment playlist take minutes (quadratic).
    public private(set) var isMultivariant = false
    public private(set) var isEnded = false
    public func tags(_ name: String) -> [Tag] { tags.filter { $0.name == name } }
    public func value(_ name: String) -> String? { tags.first { $0.name == name }?.value }

    public init(text: String) {
        self.text = text
        // Lines end in LF or CRLF (§4.1); "\r\n" is one Character to Swift, so both are named.
        var split = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map { line -> String in
            line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
        }
        if split.last == "" { split.removeLast() }
        lines = split
        var extinf: String?, extinfCount = 0, pdt: String?, discontinuity = false, map: String?, byteRange: String?
        var streamInf: Tag?
        var pending: [Tag] = []
        for (index, line) in lines.enumerated() {
            let number = index + 1
            if line.hasPrefix("#EXT") {
                let body = line.dropFirst()
                let colon = body.firstIndex(of: ":")
                let tag = Tag(name: String(colon.map { body[..<$0] } ?? body),
                              value: colon.map { String(body[body.index(after: $0)...]) }, line: number)
                tags.append(tag)
                if ["EXT-X-STREAM-INF", "EXT-X-I-FRAME-STREAM-INF", "EXT-X-MEDIA"].contains(tag.name) { isMultivariant = true }
                if tag.name == "EXT-X-ENDLIST" { isEnded = true }
                switch tag.name {
                case "EXTINF": extinf = tag.value; extinfCount += 1; pending.append(tag)
                case "EXT-X-PROGRAM-DATE-TIME": pdt = tag.value; pending.append(tag)
                case "EXT-X-DISCONTINUITY": discontinuity = true; pending.append(tag)
                case "EXT-X-BYTERANGE": byteRange = tag.value; pending.append(tag)
                case "EXT-X-MAP": map = Self.attributes(tag.value ?? "")["URI"]
                case "EXT-X-STREAM-INF": streamInf = tag
                case "EXT-X-I-FRAME-STREAM-INF":
                    let attributes = Self.attributes(tag.value ?? "")
                    iFrameStreams.append(Variant(attributes: attributes, uri: attributes["URI"] ?? "", line: number))
                default: break
                }
            } else if line.hasPrefix("#") || line.isEmpty {
                continue
            } else if let inf = streamInf {
                variants.append(Variant(attributes: Self.attributes(inf.value ?? ""), uri: line, line: inf.line))
                streamInf = nil
            } else {
                segments.append(Segment(uri: line, line: number, extinf: extinf, extinfCount: extinfCount,
                                        programDateTime: pdt, discontinuity: discontinuity, map: map, byteRange: byteRange))
                extinf = nil; extinfCount = 0; pdt = nil; discontinuity = false; byteRange = nil; pending = []
            }
        }
        danglingTags = pending + (streamInf.map { [$0] } ?? [])
    }

    /// The URI of the first EXT-X-MAP: the rendition's own init (a rung the heat dropped
    /// names the rung below's before the segments it carries).
    public var mapURI: String? { value("EXT-X-MAP").flatMap { Self.attributes($0)["URI"] } }

    /// Every segment (of `range`, when given) plays under the rendition's own init.
    public func ownInitThroughout(_ range: ClosedRange<Int>? = nil) -> Bool {
        let own = mapURI
        return (range.map { Array(segments[$0]) } ?? segments).allSatisfy { $0.map == own }
    }

    /// Splits an attribute list (§4.2) into names and values, quotes removed.
    public static func attributes(_ list: String) -> [String: String] {
        (try? attributeList(list).reduce(into: [String: String]()) { $0[$1.name] = $1.value }) ?? [:]
    }

    /// Why an attribute list is malformed (RFC 8216bis §4.2).
    public enum AttributeError: Error, CustomStringConvertible, Equatable {
        case missingEquals(list: String)
        case badName(String)
        case unterminatedQuote
        case emptyQuoted(name: String)
        case whitespace(name: String)
        case duplicate(name: String)
        case junkAfter(name: String)

        public var description: String {
            switch self {
            case .missingEquals(let list): return "attribute without '=' in \(list)"
            case .badName(let name): return "bad attribute name '\(name)'"
            case .unterminatedQuote: return "unterminated quoted string"
            case .emptyQuoted(let name): return "empty quoted string for \(name)"
            case .whitespace(let name): return "whitespace in value of \(name)"
            case .duplicate(let name): return "duplicate attribute \(name)"
            case .junkAfter(let name): return "junk after attribute \(name)"
            }
        }
    }

    /// The attribute list in order, or why it is malformed (§4.2: names [A-Z0-9-]+, no
    /// spaces around '=', quoted strings without CR/LF/'"').
    public static func attributeList(_ list: String) throws -> [(name: String, value: String, quoted: Bool)] {
        var result: [(String, String, Bool)] = []
        var chars = Substring(list)
        while !chars.isEmpty {
            guard let eq = chars.firstIndex(of: "=") else { throw AttributeError.missingEquals(list: list) }
            let name = String(chars[..<eq])
            guard !name.isEmpty, name.allSatisfy({ ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }) else {
                throw AttributeError.badName(name)
            }
            chars = chars[chars.index(after: eq)...]
            var value: String, quoted = false
            if chars.first == "\"" {
                chars = chars.dropFirst()
                guard let close = chars.firstIndex(of: "\"") else { throw AttributeError.unterminatedQuote }
                value = String(chars[..<close])
                quoted = true
                chars = chars[chars.index(after: close)...]
                if value.isEmpty { throw AttributeError.emptyQuoted(name: name) }
            } else {
                let end = chars.firstIndex(of: ",") ?? chars.endIndex
                value = String(chars[..<end])
                chars = chars[end...]
                if value.contains(" ") { throw AttributeError.whitespace(name: name) }
            }
            if result.contains(where: { $0.0 == name }) { throw AttributeError.duplicate(name: name) }
            result.append((name, value, quoted))
            if chars.first == "," { chars = chars.dropFirst() } else if !chars.isEmpty {
                throw AttributeError.junkAfter(name: name)
            }
        }
        return result
    }
}
