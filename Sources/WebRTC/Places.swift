/// Who may take a viewer's place (issue 44): `webrtc.max_viewers` places in all and
/// `max_viewers_per_address` per client address (IPv6 by its /64). An offer whose
/// browser has not yet checked connectivity holds its place only until someone else
/// needs it: at the limit, the oldest such pending session is displaced for the new
/// offer, so offers that never do ICE cannot keep a real viewer out. Pure.
enum Places {
    struct Holder: Equatable {
        /// The session's resource id.
        var id: String
        /// The client's address as counted (`SocketAddress.clientGroup`).
        var group: [UInt8]
        /// The browser has checked connectivity and nominated a pair.
        var checked: Bool
        /// When the offer came (CLOCK_MONOTONIC ns).
        var since: Int64
    }

    enum Admission: Equatable {
        /// Take a place; first end the pending session named, if any.
        case admit(displacing: String?)
        case full
        case fullFromAddress
    }

    static func admit(_ holders: [Holder], group: [UInt8], maximum: Int, perAddress: Int) -> Admission {
        guard holders.filter({ $0.group == group }).count < perAddress else { return .fullFromAddress }
        guard holders.count >= maximum else { return .admit(displacing: nil) }
        let pending = holders.filter { !$0.checked }.min { $0.since < $1.since }
        return pending.map { .admit(displacing: $0.id) } ?? .full
    }
}
