import System

extension WebServer {
    /// How many clients, for how long: what one hostile client cannot exhaust.
    public struct Limits: Sendable {
        /// All connections at once: a share of the open files this process may have.
        public var connections: Int
        /// Connections from one address (a browser opens six; a few viewers behind one NAT).
        public var perAddress: Int
        /// A connection idle this long is closed.
        public var idleSeconds: Int
        /// A request head must be complete this long after the connection opened or the
        /// previous response was sent.
        public var requestSeconds: Double
        /// Downloads made on request (exports) at once: half the cores, at least one.
        public var downloads: Int
        /// Low-latency requests held at once: half the connections, so held requests alone
        /// never fill the server (issue 29); past it, a 503 at once.
        public var heldRequests: Int { max(1, connections / 2) }

        public init(connections: Int, perAddress: Int = 32, idleSeconds: Int = 15, requestSeconds: Double = 5,
                    downloads: Int = max(1, ThisProcess.processorCount / 2)) {
            self.connections = connections
            self.perAddress = perAddress
            self.idleSeconds = idleSeconds
            self.requestSeconds = requestSeconds
            self.downloads = max(1, downloads)
        }

        /// A quarter of the soft open-file limit (256 of systemd's default 1024), at most
        /// 1024: the rest stays for streams, recordings, devices and uploads.
        public static var forThisProcess: Limits {
            let soft = ThisProcess.openFileLimit ?? 1024
            return Limits(connections: max(16, min(1024, soft / 4)))
        }
    }
}
