import System
import Threading

/// Failed logins per address: ten at once, then one more every six seconds (a token
/// bucket), so guessing is slow while someone who mistyped twice is not held up. A
/// refused address waits; other addresses are not touched. IPv6 clients are counted by
/// their /64, which one host can fill with addresses. At most `capacity` addresses are
/// remembered: past that, those that have earned all their attempts back are forgotten
/// first, then the oldest.
public final class LoginLimiter: Sendable {
    public let burst: Int
    /// Nanoseconds to earn one attempt back.
    public let refill: Int64
    let capacity: Int
    private let buckets = Locked<[[UInt8]: (tokens: Double, at: Int64)]>([:])

    public init(burst: Int = 10, refillSeconds: Double = 6, capacity: Int = 4096) {
        self.burst = burst
        refill = Int64(refillSeconds * 1e9)
        self.capacity = capacity
    }

    /// Seconds until `client` may try again; nil: it may now.
    public func wait(_ client: String, now: Int64) -> Int? {
        let key = Self.key(client)
        return buckets.withLock { buckets -> Int? in
            guard let bucket = buckets[key] else { return nil }
            let tokens = level(bucket, now: now)
            guard tokens < 1 else { return nil }
            return Int(((1 - tokens) * Double(refill) / 1e9).rounded(.up))
        }
    }

    /// A failed login from `client`.
    public func failed(_ client: String, now: Int64) {
        let key = Self.key(client)
        buckets.withLock { buckets in
            let tokens = buckets[key].map { level($0, now: now) } ?? Double(burst)
            if buckets[key] == nil && buckets.count >= capacity {
                let rested = buckets.filter { level($0.value, now: now) >= Double(burst) }.map(\.key)
                for old in rested { buckets[old] = nil }
                if buckets.count >= capacity, let oldest = buckets.min(by: { $0.value.at < $1.value.at })?.key { buckets[oldest] = nil }
            }
            buckets[key] = (max(0, tokens - 1), now)
        }
    }

    private func level(_ bucket: (tokens: Double, at: Int64), now: Int64) -> Double {
        min(Double(burst), bucket.tokens + Double(max(0, now - bucket.at)) / Double(refill))
    }

    /// The address as counted (IPv6 by its /64).
    static func key(_ client: String) -> [UInt8] { SocketAddress.clientGroup(client) }
}
