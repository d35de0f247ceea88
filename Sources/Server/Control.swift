import Access
import Layout

/// Control calls (`POST /api/record/start`, …): a bearer token, no body, one action each.
extension WebServer {
    /// Why a control call is refused, if it is: no such action (404/405), no token
    /// configured (403), the wrong one (401), or a body (413: control takes none).
    func refusal(_ url: String, header: (String) -> String?) -> Reply? {
        let text = { (status: UInt32, message: String) in
            Reply(status: status, body: .bytes(Array((message + "\n").utf8)), headers: [("Content-Type", "text/plain")])
        }
        guard control[url] != nil else {
            return api[url] != nil || downloads[url] != nil || url.hasPrefix(StreamLayout.streamsURL) ? Reply(status: 405, body: .bytes([]), headers: [("Allow", "GET, HEAD")])
                : text(404, "not found")
        }
        if let refusal = operatorRefusal(header) { return refusal }
        if header("Transfer-Encoding") != nil || (header("Content-Length").map { $0 != "0" } ?? false) {
            return text(413, "control requests take no body")
        }
        return nil
    }

    /// Why a call for the operator is refused, if it is: no token configured (403), a
    /// wrong or missing one (401).
    func operatorRefusal(_ header: (String) -> String?) -> Reply? {
        let text = { (status: UInt32, message: String) in
            Reply(status: status, body: .bytes(Array((message + "\n").utf8)), headers: [("Content-Type", "text/plain")])
        }
        guard let token, !token.isEmpty else { return text(403, "control is off: set server.token to enable it") }
        let given = header("Authorization") ?? ""
        guard AccessList.constantTimeEqual(Array(given.utf8), Array("Bearer \(token)".utf8)) else {
            var reply = text(401, "a bearer token is required")
            reply.headers.append(("WWW-Authenticate", "Bearer"))
            return reply
        }
        return nil
    }

    /// A control call that `refusal` let through at libmicrohttpd's first call.
    func command(_ url: String, argument: (String) -> String? = { _ in nil }) -> Reply {
        guard let action = control[url] else { return Reply(status: 404, body: .bytes(Array("not found\n".utf8))) }
        do {
            return Reply(status: 200, body: .bytes(try action(argument)), headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")])
        } catch let refused as ControlRefusal {
            return Reply(status: refused.status, body: .bytes(Array((refused.message + "\n").utf8)), headers: [("Content-Type", "text/plain")])
        } catch {
            return Reply(status: 500, body: .bytes(Array("\(error)\n".utf8)), headers: [("Content-Type", "text/plain")])
        }
    }
}
