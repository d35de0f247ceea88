import Basics

/// SOAP 1.2 as ONVIF uses it (ONVIF Core §5.1, §5.11): a request's envelope read into its
/// operation (the body's first element) and its WS-Security header; answers and faults
/// written with every namespace the services use declared once on the envelope.
public enum SOAP {
    public static let envelopeNamespace = "http://www.w3.org/2003/05/soap-envelope"
    static let securityNamespace = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"

    /// The prefixes every answer uses.
    static let namespaces: [(String, String)] = [
        ("env", envelopeNamespace),
        ("tds", "http://www.onvif.org/ver10/device/wsdl"),
        ("trt", "http://www.onvif.org/ver10/media/wsdl"),
        ("tt", "http://www.onvif.org/ver10/schema"),
        ("ter", "http://www.onvif.org/ver10/error"),
    ]

    public struct Request: Sendable {
        /// The body's first element: the operation and its arguments.
        public var operation: XMLElement
        /// The WS-Security UsernameToken, when the header has one.
        public var token: UsernameToken?
    }

    /// Why a request is not one: the fault to answer with.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case xml(XMLError)
        case notAnEnvelope(String)
        case emptyBody

        public var description: String {
            switch self {
            case .xml(let error): return "\(error)"
            case .notAnEnvelope(let name): return "not a SOAP 1.2 envelope: <\(name.prefix(40))>"
            case .emptyBody: return "a SOAP body without an operation"
            }
        }
    }

    public static func parse(_ bytes: [UInt8]) throws -> Request {
        let root: XMLElement
        do { root = try XMLReader.parse(bytes) } catch let error as XMLError { throw Refusal.xml(error) }
        guard root.name == "Envelope", root.namespace == envelopeNamespace else { throw Refusal.notAnEnvelope(root.name) }
        guard let operation = root.child("Body")?.children.first else { throw Refusal.emptyBody }
        let token = root.find("Header", "Security", "UsernameToken").flatMap(UsernameToken.init)
        return Request(operation: operation, token: token)
    }

    /// An answer: `body` is the body's content, written with the prefixes above.
    public static func envelope(_ body: String, header: String = "", namespaces extra: [(String, String)] = []) -> String {
        let declarations = (namespaces + extra).map { " xmlns:\($0.0)=\"\($0.1)\"" }.joined()
        let head = header.isEmpty ? "" : "<env:Header>\(header)</env:Header>"
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<env:Envelope\(declarations)>\(head)<env:Body>\(body)</env:Body></env:Envelope>\n"
    }

    /// A fault (SOAP 1.2 §5.4, ONVIF Core §5.11.2): the code (`env:Sender` for the
    /// client's mistakes, `env:Receiver` for the device's), ONVIF's subcodes, one reason.
    public struct Fault: Error, Equatable, CustomStringConvertible {
        public var code: String
        public var subcodes: [String]
        public var reason: String
        /// ONVIF Core §5.11.2.1: 400 for a sender's fault, 500 for the receiver's.
        public var httpStatus: Int { code == "env:Sender" ? 400 : 500 }

        public init(_ code: String, _ subcodes: [String], _ reason: String) {
            self.code = code
            self.subcodes = subcodes
            self.reason = reason
        }

        public var description: String { "\(subcodes.last ?? code): \(reason)" }

        public var xml: String {
            var subcode = ""
            for value in subcodes.reversed() {
                subcode = "<env:Subcode><env:Value>\(value)</env:Value>\(subcode)</env:Subcode>"
            }
            return SOAP.envelope("<env:Fault><env:Code><env:Value>\(code)</env:Value>\(subcode)</env:Code>"
                                 + "<env:Reason><env:Text xml:lang=\"en\">\(escape(reason))</env:Text></env:Reason></env:Fault>")
        }

        public static func notAuthorized(_ reason: String) -> Fault { Fault("env:Sender", ["ter:NotAuthorized"], reason) }
        public static func actionNotSupported(_ operation: String) -> Fault {
            Fault("env:Receiver", ["ter:ActionNotSupported"], "\(operation.prefix(60)) is not an operation this device offers")
        }
        public static func wellFormed(_ reason: String) -> Fault { Fault("env:Sender", ["ter:WellFormed"], reason) }
        public static func invalidArgument(_ subcode: String, _ reason: String) -> Fault { Fault("env:Sender", ["ter:InvalidArgVal", subcode], reason) }
    }

    /// Text and attribute values made safe for XML (§2.4's five).
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }
}

/// WS-Security's UsernameToken (OASIS UsernameToken Profile 1.0 §3.1): a user, a password
/// or its digest, and the nonce and creation time the digest covers.
public struct UsernameToken: Sendable, Equatable {
    public var username: String
    public var password: String
    /// PasswordDigest (Base64 of SHA-1 of nonce + created + password), else PasswordText.
    public var isDigest: Bool
    /// The nonce's bytes (Base64-decoded), and the Created time as sent.
    public var nonce: [UInt8]
    public var created: String

    public init?(_ element: XMLElement) {
        guard let username = element.child("Username")?.text, let password = element.child("Password") else { return nil }
        self.username = username
        self.password = password.text
        isDigest = password.attributes["Type"]?.hasSuffix("#PasswordDigest") ?? false
        nonce = element.child("Nonce").flatMap { Base64.decode($0.text) } ?? []
        created = element.child("Created")?.text ?? ""
    }
}
