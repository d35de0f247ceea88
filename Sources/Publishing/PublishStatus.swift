import Basics

extension Publisher {
    /// What /api/status shows of publishing.
    public struct Status: Sendable, Equatable {
        public var destination: String
        public var pendingSegments: Int
        public var pendingBytes: Int
        public var oldestPendingSeconds: Double?
        public var streamsPublishing: Int
        public var attempts: Int
        public var failures: Int
        public var bytes: Int
        public var lastError: String?

        public init(destination: String, pendingSegments: Int, pendingBytes: Int, oldestPendingSeconds: Double?,
                    streamsPublishing: Int, attempts: Int, failures: Int, bytes: Int, lastError: String?) {
            self.destination = destination
            self.pendingSegments = pendingSegments
            self.pendingBytes = pendingBytes
            self.oldestPendingSeconds = oldestPendingSeconds
            self.streamsPublishing = streamsPublishing
            self.attempts = attempts
            self.failures = failures
            self.bytes = bytes
            self.lastError = lastError
        }

        /// As `/api/status` shows it, under "publish".
        public var json: JSON {
            .fields(["destination": destination, "attempts": attempts, "failures": failures, "bytes": bytes,
                     "pending_segments": pendingSegments, "pending_bytes": pendingBytes,
                     "oldest_pending_seconds": oldestPendingSeconds, "streams_publishing": streamsPublishing,
                     "last_error": lastError])
        }
    }
}
