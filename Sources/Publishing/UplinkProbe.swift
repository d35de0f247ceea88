import Threading

/// The source talk's "test upload": before a stream starts, PUT a probe object to the
/// destination and time it, to choose a quality the uplink can carry.
public enum UplinkProbe {
    public static let size = 256 * 1024
    public static let path = ".onair-probe"

    /// Measured throughput in bits per second; throws if the upload fails.
    public static func measure(with transport: Transport) throws -> Int {
        var generator = SystemRandomNumberGenerator()
        // Random bytes, so no compression on the way can flatter the figure.
        let body = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let started = monotonicNanoseconds()
        try transport.put(path, body: body, contentType: "application/octet-stream", cacheControl: "no-cache")
        let elapsed = max(1, monotonicNanoseconds() - started)
        return Int(Double(size * 8) * 1e9 / Double(elapsed))
    }

    /// The highest of `options` (name, bits per second) whose rate is at most half the
    /// throughput; the lowest when none is.
    public static func choose<Option>(_ options: [(option: Option, bitrate: Int)], throughput: Int) -> Option {
        let sorted = options.sorted { $0.bitrate < $1.bitrate }
        return sorted.last { $0.bitrate * 2 <= throughput }?.option ?? sorted[0].option
    }
}
