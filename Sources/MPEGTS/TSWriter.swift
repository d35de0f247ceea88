import Media

/// The live stream as an MPEG-2 transport stream (ISO/IEC 13818-1), as SRT destinations
/// and their receivers (ffmpeg, OBS, a hardware decoder, Cloudflare Stream) take it: one
/// program of H.264 (stream type 0x1B, Annex B with an access unit delimiter first and the
/// parameter sets before each IDR; ITU-T H.264 Annex B, ISO/IEC 13818-1 §2.14) and AAC in
/// ADTS (stream type 0x0F; ISO/IEC 13818-7 §6.2). PAT and PMT before every IDR and at
/// least every 100 ms (§2.4.4), a PCR on the video PID at least every 40 ms (§2.4.2.2
/// asks for 100 ms at most), continuity counters per PID (§2.4.3.3). Pure: the caller
/// sends the 188-byte packets.
public struct TSWriter: Sendable {
    public static let packetSize = 188
    static let patPID: UInt16 = 0, pmtPID: UInt16 = 0x1000, videoPID: UInt16 = 0x100, audioPID: UInt16 = 0x101
    /// The decoder's buffer: presentation times run this far ahead of the PCR (FFmpeg's
    /// mpegts muxer's default, which every receiver takes).
    static let delay: Int64 = 63_000
    static let tablePeriod: Int64 = 9_000, pcrPeriod: Int64 = 3_600

    private var continuity: [UInt16: UInt8] = [:]
    private let audio: AudioSpecificConfig?
    private var lastTables: Int64?
    private var lastPCR: Int64?
    /// PIDs whose next packet says its continuity counter does not follow (packets of it
    /// were written and not sent: a sender that fell behind dropped them).
    private var discontinuous: Set<UInt16> = []

    /// `audio`: the AAC's configuration; nil for a stream without sound.
    public init(audio: AudioSpecificConfig?) {
        self.audio = audio
    }

    /// One picture (length-prefixed NAL units, as the encoder made it) at `time` (90 kHz,
    /// the stream's clock from 0): its packets. An IDR carries `sps` and `pps` first.
    public mutating func video(_ accessUnit: [UInt8], isSync: Bool, sps: [UInt8], pps: [UInt8], time: Int64) -> [UInt8] {
        var out: [UInt8] = []
        if isSync || lastTables.map({ time - $0 >= Self.tablePeriod }) ?? true { out += tables(); lastTables = time }
        var annexB: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0]  // access unit delimiter: any slice type
        if isSync { annexB += [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps }
        if let units = try? H264.splitLengthPrefixed(accessUnit) {
            for unit in units { annexB += [0, 0, 0, 1] + unit }
        }
        let pes = Self.pes(streamID: 0xE0, payload: annexB, pts: time + Self.delay, bounded: false)
        lastPCR = time
        out += packets(pid: Self.videoPID, pes, pcr: time, randomAccess: isSync)
        return out
    }

    /// One AAC access unit (raw) at `time` (90 kHz on the stream's clock): its packets,
    /// with a PCR-only packet first when the last PCR is 40 ms old.
    public mutating func audio(_ accessUnit: [UInt8], time: Int64) -> [UInt8] {
        guard let audio else { return [] }
        var out: [UInt8] = []
        if lastTables.map({ time - $0 >= Self.tablePeriod }) ?? true { out += tables(); lastTables = time }
        if let last = lastPCR, time - last >= Self.pcrPeriod {
            out += pcrOnly(time)
            lastPCR = time
        }
        let frame = Self.adts(audio, length: accessUnit.count) + accessUnit
        out += packets(pid: Self.audioPID, Self.pes(streamID: 0xC0, payload: frame, pts: time + Self.delay, bounded: true), pcr: nil, randomAccess: false)
        return out
    }

    /// What was written since the last packets sent will not be sent: the next packet of
    /// each PID carries the discontinuity indicator (§2.4.3.5), so a receiver knows the
    /// counters' jump is meant, and tables come again at once.
    public mutating func discontinuity() {
        discontinuous = [Self.patPID, Self.pmtPID, Self.videoPID, Self.audioPID]
        lastTables = nil
    }

    // MARK: Tables (§2.4.4.3, §2.4.4.8)

    mutating func tables() -> [UInt8] {
        // PAT: program 1 at the PMT's PID.
        var pat: [UInt8] = [0x00, 0x01, 0xC1, 0x00, 0x00, 0x00, 0x01]  // ts id 1, version 0, current; section 0 of 0; program 1
        pat += [0xE0 | UInt8(Self.pmtPID >> 8), UInt8(Self.pmtPID & 0xFF)]
        var pmt: [UInt8] = [0x00, 0x01, 0xC1, 0x00, 0x00]  // program 1, version 0, current, section 0 of 0
        pmt += [0xE0 | UInt8(Self.videoPID >> 8), UInt8(Self.videoPID & 0xFF), 0xF0, 0x00]  // PCR PID; no program descriptors
        pmt += [0x1B, 0xE0 | UInt8(Self.videoPID >> 8), UInt8(Self.videoPID & 0xFF), 0xF0, 0x00]
        if audio != nil { pmt += [0x0F, 0xE0 | UInt8(Self.audioPID >> 8), UInt8(Self.audioPID & 0xFF), 0xF0, 0x00] }
        return section(pid: Self.patPID, table: 0x00, pat) + section(pid: Self.pmtPID, table: 0x02, pmt)
    }

    /// A PSI section in one packet: pointer field, table id, length, the body, CRC-32.
    private mutating func section(pid: UInt16, table: UInt8, _ body: [UInt8]) -> [UInt8] {
        let length = body.count + 4
        var section: [UInt8] = [table, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF)] + body
        let crc = CRC32MPEG2.checksum(section)
        section += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        let mark = discontinuous.remove(pid) != nil
        var packet = header(pid: pid, start: true, adaptation: mark)
        if mark { packet += [1, 0x80] }
        packet.append(0)  // pointer_field
        packet += section
        packet += [UInt8](repeating: 0xFF, count: Self.packetSize - packet.count)
        return packet
    }

    // MARK: PES (§2.4.3.6)

    static func pes(streamID: UInt8, payload: [UInt8], pts: Int64, bounded: Bool) -> [UInt8] {
        var header: [UInt8] = [0, 0, 1, streamID]
        let length = 3 + 5 + payload.count
        // A video PES may be unbounded (length 0, §2.4.3.7); audio ones fit.
        let field = bounded && length <= 0xFFFF ? length : 0
        header += [UInt8(field >> 8), UInt8(field & 0xFF), 0x80, 0x80, 5]  // marker bits; PTS only; 5 bytes of it
        header += timestamp(pts, marker: 0x2)
        return header + payload
    }

    /// A 33-bit PTS in its five bytes with marker bits (§2.4.3.7).
    static func timestamp(_ value: Int64, marker: UInt8) -> [UInt8] {
        let t = UInt64(bitPattern: value) & 0x1_FFFF_FFFF
        return [marker << 4 | UInt8((t >> 29) & 0x0E) | 1, UInt8((t >> 22) & 0xFF), UInt8((t >> 14) & 0xFE) | 1,
                UInt8((t >> 7) & 0xFF), UInt8((t << 1) & 0xFE) | 1]
    }

    /// The 7-byte ADTS header of one AAC frame of `length` bytes (ISO/IEC 13818-7 §6.2.1):
    /// MPEG-4, no CRC, the profile, rate index and channels of the configuration.
    static func adts(_ config: AudioSpecificConfig, length: Int) -> [UInt8] {
        let profile = UInt8(max(0, min(3, config.objectType - 1)))
        let index = UInt8(AudioSpecificConfig.sampleRates.firstIndex(of: config.sampleRate) ?? 3)
        let channels = UInt8(config.channelConfiguration & 7)
        let size = min(length + 7, 0x1FFF)
        return [0xFF, 0xF1, profile << 6 | index << 2 | channels >> 2, (channels & 3) << 6 | UInt8(size >> 11),
                UInt8((size >> 3) & 0xFF), UInt8((size & 7) << 5) | 0x1F, 0xFC]
    }

    // MARK: Packets (§2.4.3.2)

    private mutating func header(pid: UInt16, start: Bool, adaptation: Bool, payload: Bool = true) -> [UInt8] {
        let counter = continuity[pid, default: 15]
        let next = payload ? (counter + 1) & 0x0F : counter
        continuity[pid] = next
        let control: UInt8 = (adaptation ? 0x20 : 0) | (payload ? 0x10 : 0)
        return [0x47, (start ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF), control | next]
    }

    /// `pes` in packets of `pid`: the first with the PCR and the random access indicator
    /// when asked, the last filled out with adaptation-field stuffing.
    private mutating func packets(pid: UInt16, _ pes: [UInt8], pcr: Int64?, randomAccess: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((pes.count / 184 + 2) * Self.packetSize)
        var offset = 0
        var first = true
        while offset < pes.count {
            var adaptation: [UInt8] = []
            let mark = first && discontinuous.remove(pid) != nil
            if first, pcr != nil || randomAccess || mark {
                adaptation = [(mark ? 0x80 : 0) | (randomAccess ? 0x40 : 0) | (pcr != nil ? 0x10 : 0)]
                if let pcr { adaptation += Self.pcr(pcr) }
            }
            let room = 184 - (adaptation.isEmpty ? 0 : 1 + adaptation.count)
            let take = min(room, pes.count - offset)
            if take < room {
                // Stuffing: an adaptation field long enough to fill the packet (§2.4.3.5).
                let stuffing = room - take
                if adaptation.isEmpty {
                    adaptation = stuffing == 1 ? [] : [0x00] + [UInt8](repeating: 0xFF, count: stuffing - 2)
                    if stuffing == 1 {
                        // An adaptation field of length 0: one byte, the length itself.
                        out += header(pid: pid, start: first, adaptation: true) + [0] + pes[offset..<(offset + take)]
                        offset += take
                        first = false
                        continue
                    }
                } else {
                    adaptation += [UInt8](repeating: 0xFF, count: stuffing)
                }
            }
            var packet = header(pid: pid, start: first, adaptation: !adaptation.isEmpty)
            if !adaptation.isEmpty { packet += [UInt8(adaptation.count)] + adaptation }
            packet += pes[offset..<(offset + take)]
            out += packet
            offset += take
            first = false
        }
        return out
    }

    /// A packet of `videoPID` with only a PCR (no payload: its counter does not move).
    private mutating func pcrOnly(_ time: Int64) -> [UInt8] {
        var packet = header(pid: Self.videoPID, start: false, adaptation: true, payload: false)
        let adaptation: [UInt8] = [0x10] + Self.pcr(time) + [UInt8](repeating: 0xFF, count: 183 - 7)
        packet += [183] + adaptation
        return packet
    }

    /// A PCR at `time` (90 kHz): its base, six reserved bits, a zero extension (§2.4.3.5).
    static func pcr(_ time: Int64) -> [UInt8] {
        let base = UInt64(bitPattern: time) & 0x1_FFFF_FFFF
        return [UInt8((base >> 25) & 0xFF), UInt8((base >> 17) & 0xFF), UInt8((base >> 9) & 0xFF), UInt8((base >> 1) & 0xFF),
                UInt8((base & 1) << 7) | 0x7E, 0]
    }
}

/// CRC-32 of PSI sections (ISO/IEC 13818-1 Annex A): polynomial 0x04C11DB7, MSB first,
/// initial value all ones, no final XOR.
enum CRC32MPEG2 {
    static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.reduce(UInt32.max) { crc, byte in (crc << 8) ^ table[Int(((crc >> 24) ^ UInt32(byte)) & 0xFF)] }
    }
}
