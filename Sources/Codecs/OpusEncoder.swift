import Basics
import COpus

/// Opus (RFC 6716) through libopus, for WebRTC's sound: browsers have no AAC there. 20 ms
/// frames (RFC 7587 §4.2: what WebRTC endpoints expect), in-band FEC so a lost packet is
/// mostly made up from the next. Input is the microphone's 16-bit PCM at one of the rates
/// Opus takes (8, 12, 16, 24 or 48 kHz); RTP carries it on a 48 kHz clock whatever it is.
/// Not Sendable: one thread encodes.
public final class OpusEncoder {
    public let sampleRate: Int
    public let channels: Int
    private let encoder: OpaquePointer

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case rate(Int)
        case channels(Int)
        case library(Int32)
        case frame(Int)
        public var description: String {
            switch self {
            case .rate(let rate): return "Opus takes 8, 12, 16, 24 or 48 kHz, not \(rate) Hz"
            case .channels(let count): return "Opus takes 1 or 2 channels, not \(count)"
            case .library(let code): return "libopus: \(String(cString: opus_strerror(code)))"
            case .frame(let count): return "an Opus frame of \(count) samples is not 20 ms"
            }
        }
    }

    public static let rates = [8000, 12000, 16000, 24000, 48000]

    public init(sampleRate: Int, channels: Int, bitrate: Int) throws {
        guard Self.rates.contains(sampleRate) else { throw Failure.rate(sampleRate) }
        guard (1...2).contains(channels) else { throw Failure.channels(channels) }
        var error: Int32 = 0
        // VOIP would filter out what is not speech; AUDIO keeps the room as it is.
        guard let encoder = opus_encoder_create(Int32(sampleRate), Int32(channels), OPUS_APPLICATION_AUDIO, &error), error == OPUS_OK else {
            throw Failure.library(error)
        }
        self.encoder = encoder
        self.sampleRate = sampleRate
        self.channels = channels
        _ = onair_opus_set_bitrate(encoder, Int32(clamping: min(max(bitrate, 6000), 510_000)))
        _ = onair_opus_set_inband_fec(encoder, 1)
        _ = onair_opus_set_packet_loss(encoder, 5)
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Samples per channel in one 20 ms frame.
    public var frameSamples: Int { sampleRate / 50 }

    /// The encoder's look-ahead in samples at its rate: how much later its output sounds
    /// than its input (a receiver's clock lines the two up by the RTP timestamps).
    public var lookahead: Int { Int(max(0, onair_opus_lookahead(encoder))) }

    /// One 20 ms frame (interleaved) → one Opus packet.
    public func encode(_ pcm: ArraySlice<Int16>) throws -> [UInt8] {
        guard pcm.count == frameSamples * channels else { throw Failure.frame(pcm.count / channels) }
        var packet = [UInt8](repeating: 0, count: 1500)
        let written = pcm.withUnsafeBufferPointer { samples in
            packet.withUnsafeMutableBufferPointer { out in
                opus_encode(encoder, samples.baseAddress!, Int32(frameSamples), out.baseAddress!, Int32(out.count))
            }
        }
        guard written > 0 else { throw Failure.library(written) }
        packet.removeLast(packet.count - Int(written))
        return packet
    }
}

extension OpusEncoder {
    /// libopus, for `onair version`.
    public static var libraryVersion: LibraryVersion {
        LibraryVersion("libopus", versionString: String(cString: opus_get_version_string()), debianSource: debianSource("opus", onair_debian_libopus()))
    }
}
