import Media

/// What the init segment needs to know of each track.
public struct VideoTrack: Sendable, Equatable {
    public var trackID: UInt32 = 1
    public var timescale: UInt32 = 90_000
    public var width: Int
    public var height: Int
    public var sps: [UInt8]
    public var pps: [UInt8]
    /// HEVC only: the video parameter set. nil: H.264 (`avc1`); set: H.265 (`hvc1`).
    public var vps: [UInt8]?

    public init(trackID: UInt32 = 1, timescale: UInt32 = 90_000, width: Int, height: Int, sps: [UInt8], pps: [UInt8],
                vps: [UInt8]? = nil) {
        self.trackID = trackID
        self.timescale = timescale
        self.width = width
        self.height = height
        self.sps = sps
        self.pps = pps
        self.vps = vps
    }
}

public struct AudioTrack: Sendable, Equatable {
    public var trackID: UInt32 = 2
    public var sampleRate: Int
    public var channels: Int
    public var config: [UInt8]  // AudioSpecificConfig
    public var averageBitrate: UInt32

    public init(trackID: UInt32 = 2, sampleRate: Int, channels: Int, config: [UInt8], averageBitrate: UInt32) {
        self.trackID = trackID
        self.sampleRate = sampleRate
        self.channels = channels
        self.config = config
        self.averageBitrate = averageBitrate
    }
    public var timescale: UInt32 { UInt32(sampleRate) }
}

/// The HLS initialization section: `ftyp` + `moov` with empty sample tables and `mvex`,
/// as RFC 8216bis §3.1.2 and CMAF (ISO/IEC 23000-19 §7.3) require. No edit lists: AAC
/// priming is expressed by the audio track's tfdt instead (Apple, "Preparing Audio for HLS").
///
///     |ftyp| |moov |mvhd| |trak(video)| |trak(audio)| |mvex |trex| |trex|| |
public enum InitSegment {
    /// An init segment of a video track, a sound track, or both (a muxed variant); an
    /// audio rendition has the sound alone (RFC 8216bis §4.4.6.1).
    public static func make(video: VideoTrack?, audio: AudioTrack?) -> [UInt8] {
        precondition(video != nil || audio != nil, "an init segment needs a track")
        var w = ByteWriter(capacity: 1024)
        w.box("ftyp") { w in
            w.fourCC("iso6")
            w.u32(0)
            for brand in ["iso6", "cmfc", "mp41"] { w.fourCC(brand) }
        }
        w.box("moov") { w in
            w.fullBox("mvhd", version: 0, flags: 0) { w in
                w.u32(0); w.u32(0)          // creation, modification time
                w.u32(1000)                 // movie timescale
                w.u32(0)                    // duration: 0 for fragmented content
                w.u32(0x0001_0000)          // rate 1.0
                w.u16(0x0100)               // volume 1.0
                w.zeros(10)
                w.unityMatrix()
                w.zeros(24)                 // pre_defined
                w.u32(max(audio?.trackID ?? 0, video?.trackID ?? 0) + 1)  // next_track_ID
            }
            if let video { videoTrak(&w, video) }
            if let audio { audioTrak(&w, audio) }
            w.box("mvex") { w in
                if let video { trex(&w, video.trackID) }
                if let audio { trex(&w, audio.trackID) }
            }
        }
        return w.bytes
    }

    private static func trex(_ w: inout ByteWriter, _ trackID: UInt32) {
        w.fullBox("trex", version: 0, flags: 0) { w in
            w.u32(trackID)
            w.u32(1)  // default_sample_description_index
            w.u32(0); w.u32(0); w.u32(0)  // duration, size, flags: every trun says its own
        }
    }

    private static func tkhd(_ w: inout ByteWriter, trackID: UInt32, volume: UInt16, width: Int, height: Int) {
        // flags: track_enabled | track_in_movie (§8.3.2)
        w.fullBox("tkhd", version: 0, flags: 3) { w in
            w.u32(0); w.u32(0)
            w.u32(trackID)
            w.u32(0)
            w.u32(0)        // duration
            w.zeros(8)
            w.u16(0); w.u16(0)  // layer, alternate_group
            w.u16(volume)
            w.u16(0)
            w.unityMatrix()
            w.u32(UInt32(width) << 16)
            w.u32(UInt32(height) << 16)
        }
    }

    private static func mdhd(_ w: inout ByteWriter, timescale: UInt32) {
        w.fullBox("mdhd", version: 0, flags: 0) { w in
            w.u32(0); w.u32(0)
            w.u32(timescale)
            w.u32(0)
            w.u16(0x55C4)   // language "und", packed ISO-639-2/T
            w.u16(0)
        }
    }

    private static func hdlr(_ w: inout ByteWriter, type: String, name: String) {
        w.fullBox("hdlr", version: 0, flags: 0) { w in
            w.u32(0)
            w.fourCC(type)
            w.zeros(12)
            w.append(Array(name.utf8)); w.u8(0)
        }
    }

    /// dinf with one self-contained `url ` entry (flags 1), §8.7.2; RFC 8216bis §3.1.2
    /// forbids external data references.
    private static func dinf(_ w: inout ByteWriter) {
        w.box("dinf") { w in
            w.fullBox("dref", version: 0, flags: 0) { w in
                w.u32(1)
                w.fullBox("url ", version: 0, flags: 1) { _ in }
            }
        }
    }

    /// Empty sample tables: fragmented content keeps its samples in moof/mdat.
    private static func emptyTables(_ w: inout ByteWriter) {
        w.fullBox("stts", version: 0, flags: 0) { $0.u32(0) }
        w.fullBox("stsc", version: 0, flags: 0) { $0.u32(0) }
        w.fullBox("stsz", version: 0, flags: 0) { $0.u32(0); $0.u32(0) }
        w.fullBox("stco", version: 0, flags: 0) { $0.u32(0) }
    }

    /// One track: tkhd, then mdia with its media header, handler, media-specific header
    /// (vmhd/smhd), a self-contained dinf and a sample table holding only the sample entry.
    private static func trak(_ w: inout ByteWriter, trackID: UInt32, timescale: UInt32, handler: String, name: String,
                             volume: UInt16, width: Int, height: Int,
                             mediaHeader: (inout ByteWriter) -> Void, sampleEntry: (inout ByteWriter) -> Void) {
        w.box("trak") { w in
            tkhd(&w, trackID: trackID, volume: volume, width: width, height: height)
            w.box("mdia") { w in
                mdhd(&w, timescale: timescale)
                hdlr(&w, type: handler, name: name)
                w.box("minf") { w in
                    mediaHeader(&w)
                    dinf(&w)
                    w.box("stbl") { w in
                        w.fullBox("stsd", version: 0, flags: 0) { w in
                            w.u32(1)
                            sampleEntry(&w)
                        }
                        emptyTables(&w)
                    }
                }
            }
        }
    }

    private static func videoTrak(_ w: inout ByteWriter, _ v: VideoTrack) {
        trak(&w, trackID: v.trackID, timescale: v.timescale, handler: "vide", name: "VideoHandler",
             volume: 0, width: v.width, height: v.height,
             mediaHeader: { $0.fullBox("vmhd", version: 0, flags: 1) { w in w.zeros(8) } },
             sampleEntry: { visualSampleEntry(&$0, v) })
    }

    /// The visual sample entry: `avc1` (ISO/IEC 14496-15 §5.4.2) or, with a VPS, `hvc1`
    /// (§8.4.1: parameter sets only in the hvcC, none in the samples).
    private static func visualSampleEntry(_ w: inout ByteWriter, _ v: VideoTrack) {
        w.box(v.vps == nil ? "avc1" : "hvc1") { w in
            w.zeros(6); w.u16(1)        // reserved, data_reference_index
            w.zeros(16)                  // pre_defined, reserved
            w.u16(UInt16(v.width)); w.u16(UInt16(v.height))
            w.u32(0x0048_0000); w.u32(0x0048_0000)  // 72 dpi
            w.u32(0)
            w.u16(1)                     // frame_count
            var compressor = Array("onair".utf8)
            compressor.insert(UInt8(compressor.count), at: 0)
            w.append(compressor); w.zeros(32 - compressor.count)
            w.u16(0x0018)                // depth
            w.u16(0xFFFF)                // pre_defined = -1
            if let vps = v.vps {
                w.box("hvcC") { w in hevcConfiguration(&w, vps: vps, sps: v.sps, pps: v.pps) }
            } else {
                w.box("avcC") { w in avcConfiguration(&w, sps: v.sps, pps: v.pps) }
            }
        }
    }

    /// HEVCDecoderConfigurationRecord, ISO/IEC 14496-15 §8.3.3.1.2.
    static func hevcConfiguration(_ w: inout ByteWriter, vps: [UInt8], sps: [UInt8], pps: [UInt8]) {
        let parsed = try? HEVC.SPS(nal: sps[...])
        w.u8(1)                                              // configurationVersion
        w.append(parsed?.profileTierLevel ?? [UInt8](repeating: 0, count: 12))
        w.u16(0xF000)                                        // min_spatial_segmentation_idc = 0
        w.u8(0xFC)                                           // parallelismType = 0 (unknown)
        w.u8(0xFC | (parsed?.chromaFormat ?? 1))
        w.u8(0xF8 | (parsed?.bitDepthLumaMinus8 ?? 0))
        w.u8(0xF8 | (parsed?.bitDepthChromaMinus8 ?? 0))
        w.u16(0)                                             // avgFrameRate: unspecified
        // constantFrameRate 0, numTemporalLayers 1, temporalIdNested 1, lengthSizeMinusOne 3
        w.u8(0 << 6 | 1 << 3 | 1 << 2 | 3)
        w.u8(3)                                              // numOfArrays
        for (type, nal) in [(HEVC.NALType.vps, vps), (.sps, sps), (.pps, pps)] {
            w.u8(0x80 | type.rawValue)                       // array_completeness = 1
            w.u16(1)
            w.u16(UInt16(nal.count))
            w.append(nal)
        }
    }

    /// AVCDecoderConfigurationRecord, ISO/IEC 14496-15 §5.3.3.1.
    public static func avcConfiguration(_ w: inout ByteWriter, sps: [UInt8], pps: [UInt8]) {
        let profile = sps.count > 1 ? sps[1] : 0
        w.u8(1)                                  // configurationVersion
        w.u8(profile)
        w.u8(sps.count > 2 ? sps[2] : 0)         // profile_compatibility
        w.u8(sps.count > 3 ? sps[3] : 0)         // AVCLevelIndication
        w.u8(0xFC | 3)                           // lengthSizeMinusOne = 3
        w.u8(0xE0 | 1); w.u16(UInt16(sps.count)); w.append(sps)
        w.u8(1); w.u16(UInt16(pps.count)); w.append(pps)
        if [100, 110, 122, 144].contains(profile) {
            // High profiles carry chroma format and bit depths (4:2:0, 8 bit).
            w.u8(0xFC | 1); w.u8(0xF8 | 0); w.u8(0xF8 | 0); w.u8(0)
        }
    }

    private static func audioTrak(_ w: inout ByteWriter, _ a: AudioTrack) {
        trak(&w, trackID: a.trackID, timescale: a.timescale, handler: "soun", name: "SoundHandler",
             volume: 0x0100, width: 0, height: 0,
             mediaHeader: { $0.fullBox("smhd", version: 0, flags: 0) { w in w.u32(0) } },
             sampleEntry: { mp4a(&$0, a) })
    }

    /// MP4 audio sample entry (§12.2.3) with its elementary stream descriptor
    /// (ISO/IEC 14496-1 §7.2.6.5, 14496-14 §5.6).
    private static func mp4a(_ w: inout ByteWriter, _ a: AudioTrack) {
        w.box("mp4a") { w in
            w.zeros(6); w.u16(1)
            w.zeros(8)
            w.u16(UInt16(a.channels))
            w.u16(16)                    // samplesize
            w.u32(0)                     // pre_defined, reserved
            w.u32(UInt32(a.sampleRate) << 16)
            w.fullBox("esds", version: 0, flags: 0) { w in
                var decoderConfig = ByteWriter()
                decoderConfig.u8(0x40)                     // objectTypeIndication: MPEG-4 audio
                decoderConfig.u8(0x15)                     // streamType 5 (audio) << 2 | reserved 1
                decoderConfig.u24(0)                       // bufferSizeDB
                decoderConfig.u32(a.averageBitrate)        // maxBitrate
                decoderConfig.u32(a.averageBitrate)        // avgBitrate
                descriptor(&decoderConfig, tag: 0x05, a.config)
                var es = ByteWriter()
                es.u16(UInt16(a.trackID))                  // ES_ID
                es.u8(0)                                   // no dependencies, URL or OCR
                descriptor(&es, tag: 0x04, decoderConfig.bytes)
                descriptor(&es, tag: 0x06, [0x02])         // SLConfig: predefined = MP4
                descriptor(&w, tag: 0x03, es.bytes)
            }
        }
    }

    /// A descriptor with its expandable size field (14496-1 §8.3.3).
    private static func descriptor(_ w: inout ByteWriter, tag: UInt8, _ body: [UInt8]) {
        w.u8(tag)
        var size = body.count
        var sizeBytes: [UInt8] = [UInt8(size & 0x7F)]
        size >>= 7
        while size > 0 {
            sizeBytes.insert(UInt8(size & 0x7F) | 0x80, at: 0)
            size >>= 7
        }
        w.append(sizeBytes)
        w.append(body)
    }
}

extension InitSegment {
    /// A stream's init segment and its RFC 6381 codec strings (video first), from what the
    /// encoders hand out: the parameter sets (SPS and PPS, with the VPS for HEVC) and the
    /// AudioSpecificConfig. The picture size is the H.264 SPS's; HEVC takes `hevcSize`,
    /// since its SPS's is padded to whole coding tree units.
    public static func make(sps: [UInt8], pps: [UInt8], vps: [UInt8]?, hevcSize: (width: Int, height: Int),
                            audio: AudioTrack?) throws -> (bytes: [UInt8], codecs: [String]) {
        let width: Int, height: Int
        var codecs: [String]
        if vps != nil {
            codecs = [try HEVC.SPS(nal: sps[...]).codecString]
            (width, height) = hevcSize
        } else {
            let parsed = try H264SPS(nal: sps[...])
            codecs = [parsed.codecString]
            (width, height) = (parsed.width, parsed.height)
        }
        if let audio { codecs.append(try AudioSpecificConfig(bytes: audio.config).codecString) }
        let bytes = make(video: VideoTrack(width: width, height: height, sps: sps, pps: pps, vps: vps), audio: audio)
        return (bytes, codecs)
    }
}
