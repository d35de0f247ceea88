import Access
import CMicroHTTPD

/// Who may watch over HTTP: with users in `[access]`, every page, playlist, segment,
/// snapshot and WHEP offer asks for one (Digest, RFC 7616; Basic and the operator's
/// bearer token are taken too). What is not gated: ONVIF's SOAP (it carries WS-Security's
/// UsernameToken, checked by the service), control calls and the operator's routes (the
/// operator's token, checked by `operatorRefusal`), and CORS preflights (a browser sends them without credentials).
extension WebServer {
    func viewerRefusal(_ url: String, method: String, connection: OpaquePointer) -> Reply? {
        guard let access else { return nil }
        // The operator's routes have their own, stricter door (`operatorRefusal`).
        if url.hasPrefix("/onvif/") || control[url] != nil || method == "OPTIONS"
            || bodyRoutes.contains(where: { $0.operatorOnly && $0.takes(url) }) { return nil }
        let header = headerReader(connection)
        switch access.check(header("Authorization"), method: method, uri: url, client: clientAddress(connection), channel: .http) {
        case .allowed:
            return nil
        case .challenge(let stale):
            return challenge(access, stale: stale, client: clientAddress(connection))
        case .refused:
            return challenge(access, stale: false, client: clientAddress(connection))
        case .throttled(let seconds):
            return Reply(status: 429, body: .bytes(Array("too many failed logins from this address: try again in \(seconds) s\n".utf8)),
                         headers: [("Content-Type", "text/plain"), ("Retry-After", "\(seconds)")])
        }
    }

    private func challenge(_ access: AccessGate, stale: Bool, client: String) -> Reply {
        Reply(status: 401, body: .bytes(Array("a viewer's name and password are asked for\n".utf8)),
              headers: [("Content-Type", "text/plain"), ("Cache-Control", "no-store")]
                + access.challenges(.http, stale: stale, client: client).map { ("WWW-Authenticate", $0) })
    }

    /// A request header's whole value, by its length.
    func headerReader(_ connection: OpaquePointer) -> (String) -> String? {
        { name in
            var value: UnsafePointer<CChar>?
            var size = 0
            guard MHD_lookup_connection_value_n(connection, .HEADER_KIND, name, name.utf8.count, &value, &size) == .YES,
                  let value else { return nil }
            return value.withMemoryRebound(to: UInt8.self, capacity: size) { String(decoding: UnsafeBufferPointer(start: $0, count: size), as: UTF8.self) }
        }
    }

    /// The client's address as text (for limits and log lines).
    func clientAddress(_ connection: OpaquePointer) -> String {
        var address = [CChar](repeating: 0, count: 64)
        return onair_mhd_client_address(connection, &address, socklen_t(address.count)) == 0 ? String(cString: address) : "unknown"
    }
}
