import Access
import Layout
import Logging

/// Control calls (`POST /api/record/start`, …): a bearer token, no body, one action each.
extension WebServer {
    /// Why a control call is refused, if it is: no such action (404/405), no token
    /// configured (403), the wrong one (401), or a body (413: control takes none).
    func refusal(_ url: String, method: String, connection: OpaquePointer) -> Reply? {
        guard control[url] != nil else {
            return api[url] != nil || downloads[url] != nil || url.hasPrefix(StreamLayout.streamsURL) ? Reply(status: 405, body: .bytes([]), headers: [("Allow", "GET, HEAD")])
                : Reply.text(404, "not found")
        }
        if let refusal = operatorRefusal(url, method: method, connection: connection) { return refusal }
        let header = headerReader(connection)
        if header("Transfer-Encoding") != nil || (header("Content-Length").map { $0 != "0" } ?? false) {
            return Reply.text(413, "control requests take no body")
        }
        return nil
    }

    /// Why a request for the operator is refused, if it is: no token configured (403), a
    /// wrong or missing one (401, inviting a bearer token or, from a browser, the name
    /// `operator` with the token as its password), too many wrong ones from the address
    /// (429).
    func operatorRefusal(_ url: String, method: String, connection: OpaquePointer) -> Reply? {
        guard let operatorGate else { return Reply.text(403, "control is off: set server.token to enable it") }
        let client = clientAddress(connection)
        switch operatorGate.check(headerReader(connection)("Authorization"), method: method, uri: url, client: client, channel: .http) {
        case .allowed:
            return nil
        case .challenge(let stale):
            return operatorChallenge(stale: stale, client: client)
        case .refused:
            return operatorChallenge(stale: false, client: client)
        case .throttled(let seconds):
            var reply = Reply.text(429, "too many failed logins from this address: try again in \(seconds) s")
            reply.headers.append(("Retry-After", "\(seconds)"))
            return reply
        }
    }

    private func operatorChallenge(stale: Bool, client: String) -> Reply {
        var reply = Reply.text(401, "a bearer token is required (in a browser: the name operator and server.token as its password)")
        reply.headers += [("Cache-Control", "no-store")]
            + (operatorGate?.challenges(.http, stale: stale, client: client) ?? []).map { ("WWW-Authenticate", $0) } + [("WWW-Authenticate", "Bearer")]
        return reply
    }

    /// The operator's door: the bearer token (scripts), or the name `operator` with the
    /// token as its password (Digest, RFC 7616, from a browser; Basic taken too), with
    /// the failed-login limit per address; nil without a token.
    static func operatorGate(token: String?, log: Log) -> AccessGate? {
        guard let token, !token.isEmpty else { return nil }
        return AccessGate(list: AccessList(realm: "onair operator", devices: [(name: "operator", secret: token)]), token: token, log: log)
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
