import Media

/// One track's samples in a movie fragment.
public struct TrackRun: Sendable {
    public var trackID: UInt32
    /// tfdt baseMediaDecodeTime: the first sample's decode time in track ticks.
    public var baseDecodeTime: Int64
    public var samples: [EncodedSample]

    public init(trackID: UInt32, baseDecodeTime: Int64, samples: [EncodedSample]) {
        self.trackID = trackID
        self.baseDecodeTime = baseDecodeTime
        self.samples = samples
    }
}

/// Sample flags, ISO/IEC 14496-12 §8.8.3.1: sample_depends_on in bits 24–25,
/// sample_is_non_sync_sample in bit 16.
public enum SampleFlags {
    /// An IDR: depends on no other sample.
    public static let sync: UInt32 = 0x0200_0000
    /// Depends on others, and is not a sync sample.
    public static let nonSync: UInt32 = 0x0101_0000
}

/// A media segment made of one `moof` + `mdat` (RFC 8216bis §3.1.2, CMAF fragment):
///
///     |moof |mfhd| |traf |tfhd| |tfdt| |trun|| |traf ...|| |mdat video… audio…|
///
/// tfhd uses default-base-is-moof so each trun's data_offset counts from the moof's
/// first byte; tfdt is version 1 (64-bit) so a long stream never wraps.
public enum Fragment {
    static let tfhdDefaultBaseIsMoof: UInt32 = 0x02_0000
    static let trunDataOffset: UInt32 = 0x001
    static let trunDuration: UInt32 = 0x100
    static let trunSize: UInt32 = 0x200
    static let trunFlags: UInt32 = 0x400
    static let trunCompositionOffset: UInt32 = 0x800

    /// Where the first sample's data starts in a fragment `make` wrote: after the moof
    /// and the mdat's 8-byte header.
    public static func payloadOffset(_ fragment: [UInt8]) -> Int {
        (Int(fragment[0]) << 24 | Int(fragment[1]) << 16 | Int(fragment[2]) << 8 | Int(fragment[3])) + 8
    }

    public static func make(sequenceNumber: UInt32, runs: [TrackRun]) -> [UInt8] {
        let payload = runs.reduce(0) { $0 + $1.samples.reduce(0) { $0 + $1.data.count } }
        var w = ByteWriter(capacity: payload + 128 + runs.reduce(0) { $0 + 16 * $1.samples.count })
        var dataOffsetFields: [Int] = []
        w.box("moof") { w in
            w.fullBox("mfhd", version: 0, flags: 0) { $0.u32(sequenceNumber) }
            for run in runs {
                w.box("traf") { w in
                    w.fullBox("tfhd", version: 0, flags: tfhdDefaultBaseIsMoof) { $0.u32(run.trackID) }
                    // tfdt is unsigned (§8.8.12): a negative time is a timeline bug upstream.
                    precondition(run.baseDecodeTime >= 0, "negative tfdt \(run.baseDecodeTime) for track \(run.trackID)")
                    w.fullBox("tfdt", version: 1, flags: 0) { $0.u64(UInt64(run.baseDecodeTime)) }
                    let hasOffsets = run.samples.contains { $0.pts != $0.dts }
                    var flags = trunDataOffset | trunDuration | trunSize | trunFlags
                    if hasOffsets { flags |= trunCompositionOffset }
                    // Version 1 makes composition offsets signed (CMAF §7.5.17).
                    w.fullBox("trun", version: hasOffsets ? 1 : 0, flags: flags) { w in
                        w.u32(UInt32(run.samples.count))
                        dataOffsetFields.append(w.bytes.count)
                        w.u32(0)  // data_offset, patched below
                        for sample in run.samples {
                            w.u32(UInt32(sample.duration))
                            w.u32(UInt32(sample.data.count))
                            w.u32(sample.isSync ? SampleFlags.sync : SampleFlags.nonSync)
                            if hasOffsets { w.i32(Int32(sample.pts - sample.dts)) }
                        }
                    }
                }
            }
        }
        let moofSize = w.bytes.count
        var offset = moofSize + 8
        for (index, run) in runs.enumerated() {
            w.patch32(at: dataOffsetFields[index], UInt32(offset))
            offset += run.samples.reduce(0) { $0 + $1.data.count }
        }
        w.u32(UInt32(8 + payload))
        w.fourCC("mdat")
        for run in runs { for sample in run.samples { w.append(sample.data) } }
        return w.bytes
    }
}
