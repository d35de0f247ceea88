import Basics

/// The XML that SOAP and WS-Discovery bring (XML 1.0 with namespaces), read into a tree —
/// and nothing more of XML than that: no DTD is processed (a `<!DOCTYPE` is refused, so
/// no entity can be declared, expanded or fetched: "billion laughs" and external entities
/// are impossible), only the five predefined entities and character references are
/// known, and size, depth and element count are bounded. Anyone on the LAN can send
/// these bytes, to the HTTP port or to the discovery port.
public struct XMLElement: Sendable, Equatable {
    /// The local name (without its prefix) and the namespace URI its prefix is bound to.
    public var name: String
    public var namespace: String?
    /// Attributes by local name (the namespace of an attribute is not needed here).
    public var attributes: [String: String]
    public var children: [XMLElement]
    /// The character data directly inside, trimmed.
    public var text: String

    public init(name: String, namespace: String? = nil, attributes: [String: String] = [:], children: [XMLElement] = [], text: String = "") {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// The first child named `name` (local name), in any namespace.
    public func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// A descendant along `path` of local names.
    public func find(_ path: String...) -> XMLElement? {
        var element: XMLElement? = self
        for name in path { element = element?.child(name) }
        return element
    }
}

public enum XMLError: Error, Equatable, CustomStringConvertible {
    case tooLarge(Int)
    case tooDeep
    case tooManyElements
    /// A `<!DOCTYPE …>`: onair processes no DTD.
    case documentType
    case entity(String)
    case malformed(String, at: Int)

    public var description: String {
        switch self {
        case .tooLarge(let count): return "XML of \(count) bytes; at most \(XMLReader.byteLimit)"
        case .tooDeep: return "XML nested deeper than \(XMLReader.depthLimit) elements"
        case .tooManyElements: return "XML of more than \(XMLReader.elementLimit) elements"
        case .documentType: return "XML with a document type declaration (no DTD is processed)"
        case .entity(let name): return "XML entity &\(name.prefix(20)); is not one of XML's five"
        case .malformed(let what, let offset): return "XML not well-formed at byte \(offset): \(what)"
        }
    }
}

public enum XMLReader {
    public static let byteLimit = 64 << 10
    public static let depthLimit = 32
    public static let elementLimit = 2_000

    /// The document's root element.
    public static func parse(_ bytes: [UInt8]) throws -> XMLElement {
        guard bytes.count <= byteLimit else { throw XMLError.tooLarge(bytes.count) }
        var scanner = Scanner(bytes: bytes)
        return try scanner.document()
    }

    /// One pass over the bytes, keeping the open elements and the prefixes in scope.
    struct Scanner {
        let bytes: [UInt8]
        var at = 0
        var elements = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        /// A partly read element: its prefixed name, attributes, the namespace bindings it
        /// declared, children and text so far.
        struct Open {
            var qualified: String
            var attributes: [(String, String)]
            var bindings: [String: String]
            var children: [XMLElement] = []
            var text: [UInt8] = []
        }

        mutating func document() throws -> XMLElement {
            // A byte-order mark, the declaration, comments and processing instructions
            // may come before the root.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { at = 3 }
            var stack: [Open] = []
            var root: XMLElement?
            while at < bytes.count {
                if bytes[at] != UInt8(ascii: "<") {
                    try characterData(into: &stack)
                    continue
                }
                if matches("<!--") {
                    guard let end = find("-->", from: at + 4) else { throw XMLError.malformed("an unclosed comment", at: at) }
                    at = end + 3
                } else if matches("<![CDATA[") {
                    guard !stack.isEmpty, let end = find("]]>", from: at + 9) else { throw XMLError.malformed("CDATA outside an element", at: at) }
                    stack[stack.count - 1].text += bytes[(at + 9)..<end]
                    at = end + 3
                } else if matches("<!") {
                    throw XMLError.documentType
                } else if matches("<?") {
                    guard let end = find("?>", from: at + 2) else { throw XMLError.malformed("an unclosed processing instruction", at: at) }
                    at = end + 2
                } else if matches("</") {
                    at += 2
                    let name = try self.name()
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ">") else { throw XMLError.malformed("an end tag without >", at: at) }
                    at += 1
                    guard let open = stack.popLast(), open.qualified == name else { throw XMLError.malformed("</\(name.prefix(40))> closes nothing open", at: at) }
                    let element = try close(open, scope: stack)
                    if stack.isEmpty { root = element; break }
                    stack[stack.count - 1].children.append(element)
                } else {
                    guard root == nil else { throw XMLError.malformed("a second root element", at: at) }
                    at += 1
                    let (open, empty) = try startTag()
                    elements += 1
                    guard elements <= XMLReader.elementLimit else { throw XMLError.tooManyElements }
                    if empty {
                        let element = try close(open, scope: stack)
                        if stack.isEmpty { root = element; break }
                        stack[stack.count - 1].children.append(element)
                    } else {
                        stack.append(open)
                        guard stack.count <= XMLReader.depthLimit else { throw XMLError.tooDeep }
                    }
                }
            }
            guard let root else { throw XMLError.malformed(stack.isEmpty ? "no root element" : "<\(stack.last!.qualified.prefix(40))> is not closed", at: at) }
            try epilogue()
            return root
        }

        /// Text up to the next `<`: the open element's, or only space outside the root.
        mutating func characterData(into stack: inout [Open]) throws {
            let start = at
            while at < bytes.count && bytes[at] != UInt8(ascii: "<") { at += 1 }
            let text = try decode(bytes[start..<at])
            if stack.isEmpty {
                guard text.allSatisfy(Self.isSpace) else { throw XMLError.malformed("text outside the root element", at: start) }
            } else {
                stack[stack.count - 1].text += text
            }
        }

        /// After the root: only space, comments and processing instructions.
        mutating func epilogue() throws {
            while at < bytes.count {
                if Self.isSpace(bytes[at]) {
                    at += 1
                } else if matches("<!--"), let end = find("-->", from: at + 4) {
                    at = end + 3
                } else if matches("<?"), let end = find("?>", from: at + 2) {
                    at = end + 2
                } else {
                    throw XMLError.malformed("content after the root element", at: at)
                }
            }
        }

        /// After `<`: the name, the attributes, and whether it closed itself (`/>`).
        mutating func startTag() throws -> (Open, Bool) {
            let qualified = try name()
            var attributes: [(String, String)] = []
            var bindings: [String: String] = [:]
            while true {
                skipSpace()
                guard at < bytes.count else { throw XMLError.malformed("an unfinished start tag", at: at) }
                if bytes[at] == UInt8(ascii: ">") { at += 1; return (Open(qualified: qualified, attributes: attributes, bindings: bindings), false) }
                if matches("/>") { at += 2; return (Open(qualified: qualified, attributes: attributes, bindings: bindings), true) }
                let attribute = try name()
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "=") else { throw XMLError.malformed("attribute \(attribute.prefix(40)) without =", at: at) }
                at += 1
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") || bytes[at] == UInt8(ascii: "'") else {
                    throw XMLError.malformed("an unquoted attribute value", at: at)
                }
                let quote = bytes[at]
                at += 1
                let start = at
                while at < bytes.count && bytes[at] != quote {
                    guard bytes[at] != UInt8(ascii: "<") else { throw XMLError.malformed("< in an attribute value", at: at) }
                    at += 1
                }
                guard at < bytes.count else { throw XMLError.malformed("an unclosed attribute value", at: start) }
                let value = String(decoding: try decode(bytes[start..<at]), as: UTF8.self)
                at += 1
                guard attributes.count < 64 else { throw XMLError.malformed("more than 64 attributes", at: at) }
                if attribute == "xmlns" { bindings[""] = value } else if attribute.hasPrefix("xmlns:") { bindings[String(attribute.dropFirst(6))] = value } else {
                    attributes.append((attribute, value))
                }
            }
        }

        /// The finished element, its prefix resolved through the bindings in scope.
        func close(_ open: Open, scope: [Open]) throws -> XMLElement {
            func resolve(_ prefix: String) -> String? {
                if let bound = open.bindings[prefix] { return bound.isEmpty ? nil : bound }
                for outer in scope.reversed() { if let bound = outer.bindings[prefix] { return bound.isEmpty ? nil : bound } }
                return prefix == "xml" ? "http://www.w3.org/XML/1998/namespace" : nil
            }
            let parts = open.qualified.split(separator: ":", maxSplits: 1).map(String.init)
            let (prefix, local) = parts.count == 2 ? (parts[0], parts[1]) : ("", parts[0])
            let namespace = resolve(prefix)
            guard prefix.isEmpty || namespace != nil else { throw XMLError.malformed("prefix \(prefix.prefix(20)) is not bound", at: at) }
            var attributes: [String: String] = [:]
            for (name, value) in open.attributes { attributes[String(name.split(separator: ":").last ?? "")] = value }
            let text = String(decoding: open.text, as: UTF8.self).trimmingWhitespace()
            return XMLElement(name: local, namespace: namespace, attributes: attributes, children: open.children, text: text)
        }

        /// An XML name: letters, digits, `_ - . :` and any non-ASCII byte.
        mutating func name() throws -> String {
            let start = at
            while at < bytes.count, Self.isNameByte(bytes[at]) { at += 1 }
            guard at > start, at - start <= 256 else { throw XMLError.malformed("a missing or overlong name", at: start) }
            return String(decoding: bytes[start..<at], as: UTF8.self)
        }

        /// Character data with its references replaced (§4.6's five, and &#N; / &#xN;).
        func decode(_ raw: ArraySlice<UInt8>) throws -> [UInt8] {
            guard raw.contains(UInt8(ascii: "&")) else { return Array(raw) }
            var out: [UInt8] = []
            var index = raw.startIndex
            while index < raw.endIndex {
                guard raw[index] == UInt8(ascii: "&") else { out.append(raw[index]); index += 1; continue }
                guard let semicolon = raw[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { throw XMLError.entity(String(decoding: raw[index...].prefix(12), as: UTF8.self)) }
                let name = String(decoding: raw[(index + 1)..<semicolon], as: UTF8.self)
                switch name {
                case "lt": out.append(UInt8(ascii: "<"))
                case "gt": out.append(UInt8(ascii: ">"))
                case "amp": out.append(UInt8(ascii: "&"))
                case "quot": out.append(UInt8(ascii: "\""))
                case "apos": out.append(UInt8(ascii: "'"))
                default:
                    let hex = name.hasPrefix("#x") || name.hasPrefix("#X")
                    guard name.hasPrefix("#"), let value = UInt32(name.dropFirst(hex ? 2 : 1), radix: hex ? 16 : 10),
                          let scalar = Unicode.Scalar(value), value != 0 else { throw XMLError.entity(name) }
                    out += Array(String(Character(scalar)).utf8)
                }
                index = semicolon + 1
            }
            return out
        }

        func matches(_ text: String) -> Bool { bytes[at...].starts(with: text.utf8) }

        func find(_ text: String, from start: Int) -> Int? {
            let needle = Array(text.utf8)
            guard start <= bytes.count else { return nil }
            var index = start
            while index + needle.count <= bytes.count {
                if bytes[index] == needle[0] && bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
                index += 1
            }
            return nil
        }

        mutating func skipSpace() { while at < bytes.count, Self.isSpace(bytes[at]) { at += 1 } }

        static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

        static func isNameByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"), 0x80...0xFF:
                return true
            default:
                return false
            }
        }
    }
}
