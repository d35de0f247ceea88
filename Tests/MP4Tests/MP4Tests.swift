import XCTest
@testable import MP4
import Media
import TestSupport

/// Golden bytes are worked out by hand from ISO/IEC 14496-12 / -14 / -15 box layouts, so
/// they check the writer against the spec rather than against itself.
final class InitSegmentTests: XCTestCase {
    let video = VideoTrack(width: 1280, height: 720, sps: Golden.sps, pps: Golden.pps)
    let audio = AudioTrack(sampleRate: 48_000, channels: 1, config: Golden.audioConfig, averageBitrate: 64_000)

    func box(_ type: String, in bytes: [UInt8]) throws -> [UInt8] {
        func search(_ boxes: [Box]) -> Box? {
            for b in boxes { if b.type == type { return b }; if let found = search(b.children) { return found } }
            return nil
        }
        let found = try XCTUnwrap(search(try BoxTree.parse(bytes)), "no \(type)")
        return Array(bytes[found.start..<(found.start + found.size)])
    }

    func testFtypGolden() throws {
        let bytes = InitSegment.make(video: video, audio: audio)
        XCTAssertEqual(try box("ftyp", in: bytes), hex("0000001c 66747970 69736f36 00000000 69736f36 636d6663 6d703431"))
    }

    func testAvcCGolden() throws {
        let bytes = InitSegment.make(video: video, audio: audio)
        XCTAssertEqual(try box("avcC", in: bytes), hex("""
            00000032 61766343 01 64 00 1f ff e1 0017 6764001facb402802dd080000003008000001e478c1950
            01 0004 68ef3cb0 fd f8 f8 00
            """))
    }

    func testEsdsGolden() throws {
        let bytes = InitSegment.make(video: video, audio: audio)
        XCTAssertEqual(try box("esds", in: bytes), hex("""
            00000027 65736473 00000000
            03 19 0002 00
              04 11 40 15 000000 0000fa00 0000fa00
                05 02 1188
              06 01 02
            """))
    }

    func testTrexGolden() throws {
        let bytes = InitSegment.make(video: video, audio: nil)
        XCTAssertEqual(try box("trex", in: bytes), hex("00000020 74726578 00000000 00000001 00000001 00000000 00000000 00000000"))
    }

    func testMdhdAndHdlrGolden() throws {
        let bytes = InitSegment.make(video: video, audio: nil)
        XCTAssertEqual(try box("mdhd", in: bytes), hex("00000020 6d646864 00000000 00000000 00000000 00015f90 00000000 55c4 0000"))
        XCTAssertEqual(try box("hdlr", in: bytes), hex("0000002d 68646c72 00000000 00000000 76696465 000000000000000000000000")
                       + Array("VideoHandler".utf8) + [0])
    }

    func testRoundTrip() throws {
        let parsed = try ParsedInit(bytes: InitSegment.make(video: video, audio: audio))
        XCTAssertEqual(parsed.topLevel, ["ftyp", "moov"])
        XCTAssertEqual(parsed.majorBrand, "iso6")
        XCTAssertEqual(parsed.compatibleBrands, ["iso6", "cmfc", "mp41"])
        XCTAssertEqual(parsed.mvhdDuration, 0)
        XCTAssertTrue(parsed.mvexFollowsTraks)
        XCTAssertEqual(parsed.tracks.map(\.handler), ["vide", "soun"])
        let v = try XCTUnwrap(parsed.track("vide"))
        XCTAssertEqual(v.trackID, 1)
        XCTAssertEqual(v.timescale, 90_000)
        XCTAssertEqual(v.sampleEntry, "avc1")
        XCTAssertEqual([v.width, v.height], [1280, 720])
        XCTAssertEqual(v.sps, [Golden.sps])
        XCTAssertEqual(v.pps, [Golden.pps])
        XCTAssertEqual(v.nalLengthSize, 4)
        XCTAssertTrue(v.emptyTables)
        XCTAssertTrue(v.selfContainedReferences)
        XCTAssertEqual(v.editListEntries, 0)
        let a = try XCTUnwrap(parsed.track("soun"))
        XCTAssertEqual(a.trackID, 2)
        XCTAssertEqual(a.timescale, 48_000)
        XCTAssertEqual(a.sampleRate, 48_000)
        XCTAssertEqual(a.channelCount, 1)
        XCTAssertEqual(a.objectTypeIndication, 0x40)
        XCTAssertEqual(a.streamType, 5)
        XCTAssertEqual(a.audioConfig, Golden.audioConfig)
        XCTAssertEqual(parsed.trex.map(\.trackID), [1, 2])
    }

    /// From the encoders' parameter sets: the size comes from the H.264 SPS (not the size
    /// passed for HEVC), the codec strings from the SPS and the AudioSpecificConfig.
    func testFromParameterSets() throws {
        let made = try InitSegment.make(sps: Golden.sps, pps: Golden.pps, vps: nil, hevcSize: (320, 180), audio: audio)
        XCTAssertEqual(made.bytes, InitSegment.make(video: video, audio: audio))
        XCTAssertEqual(made.codecs, ["avc1.64001f", "mp4a.40.2"])
        let silent = try InitSegment.make(sps: Golden.sps, pps: Golden.pps, vps: nil, hevcSize: (320, 180), audio: nil)
        XCTAssertEqual(silent.codecs, ["avc1.64001f"])
        XCTAssertEqual(try ParsedInit(bytes: silent.bytes).tracks.map(\.handler), ["vide"])
        XCTAssertThrowsError(try InitSegment.make(sps: [0x67, 0x64], pps: Golden.pps, vps: nil, hevcSize: (320, 180), audio: nil),
                             "a truncated SPS is an error, not a guess")
    }
}

final class FragmentTests: XCTestCase {
    let samples = [
        EncodedSample(data: [0xAA, 0xBB], dts: 900_000, pts: 900_000, duration: 3000, isSync: true),
        EncodedSample(data: [0xCC], dts: 903_000, pts: 903_000, duration: 3000, isSync: false)
    ]

    func testFragmentGolden() {
        let bytes = Fragment.make(sequenceNumber: 7, runs: [TrackRun(trackID: 1, baseDecodeTime: 900_000, samples: samples)])
        XCTAssertEqual(bytes, hex("""
            00000070 6d6f6f66
              00000010 6d666864 00000000 00000007
              00000058 74726166
                00000010 74666864 00020000 00000001
                00000014 74666474 01000000 00000000000dbba0
                0000002c 7472756e 00000701 00000002 00000078
                  00000bb8 00000002 02000000
                  00000bb8 00000001 01010000
            0000000b 6d646174 aabbcc
            """))
    }

    func testCompositionOffsetsUseSignedTrunVersion1() throws {
        var reordered = samples
        reordered[1].pts = 900_000
        let bytes = Fragment.make(sequenceNumber: 1, runs: [TrackRun(trackID: 1, baseDecodeTime: 900_000, samples: reordered)])
        let parsed = try ParsedSegment(bytes: bytes)
        XCTAssertEqual(parsed.fragments[0].trafs[0].samples.map(\.compositionOffset), [0, -3000])
    }

    func testTwoTrackRoundTripAddressesEveryByte() throws {
        let audio = [EncodedSample(data: [1, 2, 3], dts: 478_976, pts: 478_976, duration: 1024, isSync: true),
                     EncodedSample(data: [4, 5], dts: 480_000, pts: 480_000, duration: 1024, isSync: true)]
        let bytes = Fragment.make(sequenceNumber: 3, runs: [
            TrackRun(trackID: 1, baseDecodeTime: 900_000, samples: samples),
            TrackRun(trackID: 2, baseDecodeTime: 478_976, samples: audio)
        ])
        let parsed = try ParsedSegment(bytes: bytes)
        XCTAssertEqual(parsed.topLevel, ["moof", "mdat"])
        XCTAssertEqual(parsed.fragments.map(\.sequenceNumber), [3])
        let v = parsed.traf(1)[0], a = parsed.traf(2)[0]
        XCTAssertEqual(v.baseDecodeTime, 900_000)
        XCTAssertEqual(v.tfdtVersion, 1)
        XCTAssertEqual(v.samples.map(\.isSync), [true, false])
        XCTAssertEqual(v.duration, 6000)
        XCTAssertEqual(a.baseDecodeTime, 478_976)
        XCTAssertTrue(v.dataInsideMdat && a.dataInsideMdat)
        let data = (v.samples + a.samples).map { Array(bytes[$0.range]) }
        XCTAssertEqual(data, [[0xAA, 0xBB], [0xCC], [1, 2, 3], [4, 5]])
        XCTAssertEqual(a.samples.last!.range.upperBound, bytes.count, "mdat holds exactly the samples")
    }

    func testReaderRejectsBoxesThatOverrunTheirParent() {
        var bytes = Fragment.make(sequenceNumber: 1, runs: [TrackRun(trackID: 1, baseDecodeTime: 0, samples: samples)])
        bytes[3] = 0xFF  // moof size now past the end
        XCTAssertThrowsError(try BoxTree.parse(bytes))
        XCTAssertThrowsError(try BoxTree.parse([0, 0, 0, 4, 0x6d]), "a size below the header")
    }

    /// Issue 13: a recording `.part` whose fragment has a 64-bit size ≥ 2^63 crashed the
    /// recording recovery; the fragments before it are kept and the rest is not trusted.
    func testFragmentedFileStopsAtAHeaderNoFileCanHave() throws {
        let fragment = Fragment.make(sequenceNumber: 1, runs: [TrackRun(trackID: 1, baseDecodeTime: 0, samples: samples)])
        let initSegment = InitSegment.make(video: VideoTrack(width: 1280, height: 720, sps: Golden.sps, pps: Golden.pps), audio: nil)
        for large: UInt64 in [1 << 63, UInt64.max, 0, 7] {
            let bad: [UInt8] = [0, 0, 0, 1] + Array("moof".utf8) + withUnsafeBytes(of: large.bigEndian, Array.init) + [UInt8](repeating: 0, count: 32)
            let file = initSegment + fragment + bad
            let scan = try FragmentedFile.scan(size: Int64(file.count)) { offset, count in
                Int(offset) + count <= file.count ? Array(file[Int(offset)..<(Int(offset) + count)]) : nil
            }
            XCTAssertEqual(scan.fragments, 1, "largesize \(large)")
            XCTAssertEqual(scan.discardedBytes, Int64(bad.count))
        }
    }
}

/// Counts from a file are compared with what is left before anything is added to them.
final class ByteReaderTests: XCTestCase {
    func testACountNearIntMaxIsAnErrorNotATrap() {
        var reader = ByteReader([1, 2, 3, 4], range: 1..<4)
        XCTAssertEqual(try reader.take(2), [2, 3])
        XCTAssertThrowsError(try reader.take(Int.max))
        XCTAssertThrowsError(try reader.skip(Int.max - 1))
        XCTAssertThrowsError(try reader.take(-1))
        XCTAssertEqual(try reader.take(1), [4])
        XCTAssertThrowsError(try reader.take(1))
    }
}
