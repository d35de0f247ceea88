/// What a receiver of an MPEG transport stream relies on, checked (ISO/IEC 13818-1 and
/// ETSI TR 101 290's first priority): packets in sync, no continuity counter skipped on
/// any PID, PAT and PMT at least every half second, a PCR at least every 100 ms. Reads
/// bytes as received (an SRT receiver's file), in one pass.
public struct TSCheck: Sendable {
    public struct Report: Sendable, Equatable {
        public var packets = 0
        /// Problems in words, the first few of each kind.
        public var problems: [String] = []
        /// PES starts per PID.
        public var starts: [UInt16: Int] = [:]
        public var pcrs = 0
        public var tables = 0
    }

    /// `bytes`: whole 188-byte packets from the first.
    public static func check(_ bytes: [UInt8]) -> Report {
        var report = Report()
        var counters: [UInt16: UInt8] = [:]
        var lastPCR: Int64?
        var lastTablesPCR: Int64?
        var said: [String: Int] = [:]
        func problem(_ kind: String, _ text: String) {
            said[kind, default: 0] += 1
            if said[kind]! <= 3 { report.problems.append(text) }
        }
        guard bytes.count % TSWriter.packetSize == 0 else {
            problem("size", "\(bytes.count) bytes is not a whole number of 188-byte packets")
            return report
        }
        var offset = 0
        while offset < bytes.count {
            let packet = bytes[offset..<(offset + TSWriter.packetSize)]
            let index = report.packets
            report.packets += 1
            offset += TSWriter.packetSize
            let base = packet.startIndex
            guard packet[base] == 0x47 else { problem("sync", "packet \(index): no sync byte"); continue }
            let pid = UInt16(packet[base + 1] & 0x1F) << 8 | UInt16(packet[base + 2])
            let start = packet[base + 1] & 0x40 != 0
            let control = (packet[base + 3] >> 4) & 3
            let counter = packet[base + 3] & 0x0F
            // A discontinuity indicator (§2.4.3.5) says a jump of the counter is meant.
            let discontinuity = control & 2 != 0 && packet[base + 4] > 0 && packet[base + 5] & 0x80 != 0
            if control & 1 != 0 {
                if let last = counters[pid], counter != (last + 1) & 0x0F, !discontinuity {
                    problem("cc", "packet \(index): PID \(pid) continuity \(counter) after \(last)")
                }
                counters[pid] = counter
            }
            var payload = base + 4
            if control & 2 != 0 {
                let length = Int(packet[base + 4])
                if length > 0 && packet[base + 5] & 0x10 != 0 && length >= 7 {
                    let b = packet[(base + 6)...]
                    let pcr = Int64(b[b.startIndex]) << 25 | Int64(b[b.startIndex + 1]) << 17 | Int64(b[b.startIndex + 2]) << 9
                        | Int64(b[b.startIndex + 3]) << 1 | Int64(b[b.startIndex + 4] >> 7)
                    if let lastPCR, pcr - lastPCR > 9_000, !discontinuity {
                        problem("pcr", "packet \(index): PCR \(Double(pcr - lastPCR) / 90) ms after the one before (at most 100)")
                    }
                    lastPCR = pcr
                    report.pcrs += 1
                }
                payload += 1 + length
            }
            if pid == 0, start {
                if let at = lastTablesPCR, let now = lastPCR, now - at > 45_000, !discontinuity {
                    problem("pat", "packet \(index): PAT \(Double(now - at) / 90) ms after the one before (at most 500)")
                }
                lastTablesPCR = lastPCR
                report.tables += 1
            }
            if start, pid != 0, pid != TSWriter.pmtPID, payload + 3 < base + TSWriter.packetSize,
               packet[payload] == 0, packet[payload + 1] == 0, packet[payload + 2] == 1 {
                report.starts[pid, default: 0] += 1
            }
        }
        if report.tables == 0 { problem("pat", "no PAT") }
        if report.pcrs == 0 { problem("pcr", "no PCR") }
        return report
    }
}
