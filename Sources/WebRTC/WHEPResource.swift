import Basics

/// WHEP's HTTP side (draft-ietf-wish-whep §4, with RFC 9725's shared rules): the endpoint
/// `/whep` (the live stream) or `/whep/<stream id>` takes an offer by POST and answers
/// 201 with the SDP answer and the session's resource in Location; the resource
/// `/whep/session/<id>` ends by DELETE; OPTIONS answers a CORS preflight; PATCH (trickle
/// ICE, ICE restarts) is not supported — ICE-lite gives every candidate in the answer —
/// and answers 405 (RFC 9725 §4.3.1). Pure: the server it drives does the rest.
public enum WHEPResource {
    public static let prefix = "/whep"
    static let sessions = "/session/"
    /// A browser's offer is a few KB (SessionDescription.sizeLimit bounds it).
    public static let maximumOffer = 64 << 10
    public static let methods = ["POST", "DELETE", "OPTIONS", "PATCH"]

    public struct Reply: Sendable, Equatable {
        public var status: UInt32
        public var headers: [String: String]
        public var body: [UInt8]
    }

    /// Any page may play the stream: WHEP players are often served from elsewhere, and
    /// they must read Location.
    static let cors = ["Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "Location, Retry-After"]

    /// `path` is below `/whep`: "" or "/<stream>" for offers, "/session/<id>" for a session.
    public static func respond(method: String, path: String, contentType: String?, body: [UInt8], client: String,
                               server: WebRTCServer) -> Reply {
        func text(_ status: UInt32, _ message: String, _ extra: [String: String] = [:]) -> Reply {
            Reply(status: status, headers: cors.merging(["Content-Type": "text/plain"]) { $1 }.merging(extra) { $1 },
                  body: Array((message + "\n").utf8))
        }
        if method == "OPTIONS" {
            return Reply(status: 204, headers: cors.merging([
                "Access-Control-Allow-Methods": "POST, DELETE, OPTIONS", "Access-Control-Allow-Headers": "Content-Type, Authorization",
                "Accept-Post": "application/sdp", "Allow": "POST, DELETE, OPTIONS"]) { $1 }, body: [])
        }
        if path.hasPrefix(sessions) {
            let id = String(path.dropFirst(sessions.count))
            switch method {
            case "DELETE": return server.end(id) ? Reply(status: 200, headers: cors, body: []) : text(404, "no such WHEP session")
            case "PATCH": return text(405, "trickle ICE and ICE restarts are not supported: the answer has every candidate", ["Allow": "DELETE, OPTIONS"])
            default: return text(405, "a WHEP session takes DELETE", ["Allow": "DELETE, OPTIONS"])
            }
        }
        guard method == "POST" else { return text(405, "the WHEP endpoint takes POST", ["Allow": "POST, OPTIONS"]) }
        let stream: String?
        switch path {
        case "", "/": stream = nil
        default:
            let id = path.dropFirst()
            guard !id.isEmpty, !id.contains("/") else { return text(404, "not a WHEP endpoint") }
            stream = String(id)
        }
        let type = contentType?.split(separator: ";").first.map { String($0).trimmingWhitespace().lowercased() }
        guard type == "application/sdp" else { return text(415, "an offer is application/sdp") }
        switch server.offer(String(decoding: body, as: UTF8.self), client: client, stream: stream) {
        case .answer(let sdp, let id):
            return Reply(status: 201, headers: cors.merging(["Content-Type": "application/sdp", "Location": prefix + sessions + id]) { $1 },
                         body: Array(sdp.utf8))
        case .refused(let status, let message, let retryAfter):
            return text(UInt32(status), message, retryAfter.map { ["Retry-After": String($0)] } ?? [:])
        }
    }
}
