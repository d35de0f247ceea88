import Codecs
import Logging
import Media
import RTP

/// The Opus encoder of the feed's sound and the samples not yet a whole 20 ms frame, on
/// the Opus thread alone. It exists only while a reader wants Opus: `stop` frees it.
struct OpusFrames {
    let bitrate: Int
    private var encoder: OpusEncoder?
    private var pending: [Int16] = []
    /// CLOCK_MONOTONIC ns of `pending`'s first sample.
    private var pendingStart: Int64 = 0
    private var failed = false

    init(bitrate: Int) { self.bitrate = bitrate }

    /// A chunk more than this off where the last one ended starts the frames again.
    static let gapNanoseconds: Int64 = 40_000_000

    mutating func stop() {
        encoder = nil
        pending = []
    }

    /// The whole 20 ms frames `chunk` completes, each with the 48 kHz timestamp of its
    /// first sample's capture time less the encoder's look-ahead (what the decoder plays
    /// at that timestamp was captured that much earlier).
    mutating func encode(_ chunk: AudioChunk, log: Log) -> [OpusPacket] {
        if encoder == nil || encoder?.sampleRate != chunk.sampleRate || encoder?.channels != chunk.channels {
            pending = []
            do { encoder = try OpusEncoder(sampleRate: chunk.sampleRate, channels: chunk.channels, bitrate: bitrate) } catch {
                if !failed { log.emit(.opusFailed, level: .warn, [("problem", "\(error)"), ("action", "WebRTC viewers get no sound")]) }
                failed = true
                return []
            }
        }
        guard let encoder else { return [] }
        let rate = Int64(chunk.sampleRate), channels = chunk.channels
        let expected = pendingStart + Int64(pending.count / channels) * 1_000_000_000 / rate
        if pending.isEmpty || abs(chunk.captureTime - expected) > Self.gapNanoseconds {
            pending = []
            pendingStart = chunk.captureTime
        }
        pending += chunk.samples
        let frame = encoder.frameSamples * channels
        let lookahead = Int64(encoder.lookahead) * 1_000_000_000 / rate
        var out: [OpusPacket] = []
        var offset = 0
        while pending.count - offset >= frame {
            if let packet = try? encoder.encode(pending[offset..<(offset + frame)]) {
                out.append(OpusPacket(payload: packet, rtpTimestamp: RTPClock.timestamp(pendingStart - lookahead, rate: 48_000)))
            }
            offset += frame
            pendingStart += 20_000_000
        }
        pending.removeFirst(offset)
        return out
    }
}
