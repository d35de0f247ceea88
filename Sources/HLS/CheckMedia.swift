import Media
import MP4

/// What the media walk carries from one segment to the next.
struct MediaWalk {
    var previousSequence: UInt32?
    var nextDecodeTime: [UInt32: UInt64] = [:]
    var firstVideoTime: UInt64?
    var playlistTime = 0.0
    var domainStart = 0.0  // playlist time where the current discontinuity domain began
    var avOffset: Double?
    var minFrameDuration: UInt32?
    var frameDurations = Set<UInt32>()
    var lastIDRTime: UInt64?
    var previousRange: (uri: String, end: Int)?
}

/// One segment as the walk sees it.
struct SegmentUnderCheck {
    let index: Int
    let entry: ParsedPlaylist.Segment
    let at: String
    let bytes: [UInt8]
    let segment: ParsedSegment
    /// It is the last segment, or the next one starts a discontinuity domain.
    let endsDomain: Bool
    let isLast: Bool
}

extension StreamChecker {
    /// I1–I11 on the init segment, S1–S15 and S17 on every segment, P9/P12 and the
    /// measured bit rates (C4–C5) for the variant check.
    mutating func checkMedia(_ p: ParsedPlaylist, path: String, targetDuration: Int) -> MediaSummary {
        var summary = MediaSummary()
        guard let first = checkMap(p, path: path, into: &summary) else { return summary }
        summary.discontinuities = p.segments.indices.filter { p.segments[$0].discontinuity }
        summary.hasVideo = first.track("vide") != nil
        summary.hasAudio = first.track("soun") != nil
        // Where a dropped rung carries the rung below, its segments name that rung's init
        // (after a discontinuity, P9): each read and checked once, with the same tracks.
        var inits = [p.mapURI ?? "": first]
        var meter = BitrateMeter(timescale: 1000, targetDuration: max(targetDuration, 1))
        var walk = MediaWalk()
        for (index, entry) in p.segments.enumerated() {
            let at = resolve(entry.uri, against: path)
            summary.segmentTimes.append(nil)
            let mapURI = entry.map ?? ""
            if inits[mapURI] == nil {
                var other = MediaSummary()
                let initPath = resolve(mapURI, against: path)
                let parsed = read(initPath, "the EXT-X-MAP").flatMap { checkInit($0, initPath, into: &other) }
                if let parsed, parsed.tracks.map({ "\($0.trackID) \($0.handler)" }) != first.tracks.map({ "\($0.trackID) \($0.handler)" }) {
                    error("P9", initPath, "its tracks differ from the first EXT-X-MAP's: one variant, one track set")
                }
                inits[mapURI] = parsed ?? first
            }
            let initSegment = inits[mapURI]!
            let video = initSegment.track("vide"), audio = initSegment.track("soun")
            guard let file = read(at, "the segment") else { continue }
            guard let bytes = byteRange(of: entry, in: file, uri: at, previous: &walk.previousRange) else { continue }
            let segment: ParsedSegment
            do { segment = try ParsedSegment(bytes: bytes, trex: initSegment.trex) } catch {
                self.error("S1", at, "\(error)"); continue
            }
            if let timing = video ?? audio, let traf = segment.traf(timing.trackID).first {
                let scale = Double(timing.timescale)
                summary.segmentTimes[index] = (Double(traf.baseDecodeTime) / scale, Double(segment.traf(timing.trackID).reduce(0) { $0 + $1.duration }) / scale)
            }
            let isLast = index == p.segments.count - 1
            let current = SegmentUnderCheck(index: index, entry: entry, at: at, bytes: bytes, segment: segment,
                                            endsDomain: isLast || p.segments[index + 1].discontinuity, isLast: isLast)
            checkLayout(current, initSegment: initSegment, walk: &walk)
            meter.add(bytes: bytes.count, ticks: Int64(((entry.duration ?? 0) * 1000).rounded()))  // at most a year: no overflow
            checkDecodeTimes(current, tracks: initSegment.tracks, walk: &walk)
            if video == nil, let audio, let audioTraf = segment.traf(audio.trackID).first {
                checkAudioRendition(current, audioTraf, audio)
            }
            guard let video, let videoTraf = segment.traf(video.trackID).first else { continue }
            checkVideoTiming(current, videoTraf, timescale: video.timescale, targetDuration: targetDuration, path: path, walk: &walk)
            checkVideoSamples(current, videoTraf, video, walk: &walk)
            if let audio, let audioTraf = segment.traf(audio.trackID).first {
                checkSync(current, video: videoTraf, timescale: video.timescale, audio: audioTraf, audio, walk: &walk)
            }
        }
        if walk.frameDurations.count > 1 { error("S17", path, "frame durations vary: \(walk.frameDurations.sorted())") }
        if let video = first.track("vide"), let d = walk.minFrameDuration, d > 0 { summary.frameRate = Double(video.timescale) / Double(d) }
        summary.peakBitrate = meter.peak
        summary.averageBitrate = meter.average
        if p.tags("EXT-X-INDEPENDENT-SEGMENTS").isEmpty { warning("P12", path, "no EXT-X-INDEPENDENT-SEGMENTS") }
        return summary
    }

    /// S1: moof+mdat pairs (after styp/sidx/prft/emsg); S2: one mfhd, sequence rising.
    private mutating func checkLayout(_ s: SegmentUnderCheck, initSegment: ParsedInit, walk: inout MediaWalk) {
        var layout = s.segment.topLevel[...]
        while let first = layout.first, ["styp", "sidx", "prft", "emsg"].contains(first) { layout = layout.dropFirst() }
        if layout.isEmpty || layout.count % 2 != 0 || stride(from: layout.startIndex, to: layout.endIndex, by: 2).contains(where: {
            layout[$0] != "moof" || layout[$0 + 1] != "mdat" }) {
            error("S1", s.at, "layout \(s.segment.topLevel.joined(separator: " ")) is not moof+mdat pairs")
        }
        for fragment in s.segment.fragments {
            if fragment.mfhdCount != 1 { error("S2", s.at, "moof has \(fragment.mfhdCount) mfhd boxes") }
            if let previous = walk.previousSequence, fragment.sequenceNumber <= previous {
                warning("S2", s.at, "mfhd sequence \(fragment.sequenceNumber) does not increase from \(previous)")
            }
            walk.previousSequence = fragment.sequenceNumber
            for traf in fragment.trafs { checkTraf(traf, at: s.at, known: initSegment.tracks) }
        }
    }

    /// S7/P9: decode times continue exactly across segments, except after
    /// EXT-X-DISCONTINUITY, where a new timeline domain starts (§4.4.4.3).
    private mutating func checkDecodeTimes(_ s: SegmentUnderCheck, tracks: [ParsedInit.Track], walk: inout MediaWalk) {
        for track in tracks {
            let trafs = s.segment.traf(track.trackID)
            if trafs.isEmpty { error("S14", s.at, "no traf for track \(track.trackID) (\(track.handler))"); continue }
            for traf in trafs {
                if let expected = walk.nextDecodeTime[track.trackID], expected != traf.baseDecodeTime, !s.entry.discontinuity {
                    error("S7", s.at, "track \(track.trackID) tfdt \(traf.baseDecodeTime), expected \(expected)")
                }
                walk.nextDecodeTime[track.trackID] = traf.baseDecodeTime &+ traf.duration
            }
        }
    }

    /// S8: media time against playlist time within a domain; S9: EXTINF against the
    /// segment's real length, and that length against TARGETDURATION.
    private mutating func checkVideoTiming(_ s: SegmentUnderCheck, _ videoTraf: ParsedSegment.TrackFragment, timescale: UInt32,
                                           targetDuration: Int, path: String, walk: inout MediaWalk) {
        let ts = Double(timescale)
        let actual = Double(videoTraf.duration) / ts
        if walk.firstVideoTime == nil || s.entry.discontinuity {
            // S17 holds per discontinuity domain: one frame rate in each.
            if walk.frameDurations.count > 1 { error("S17", path, "frame durations vary: \(walk.frameDurations.sorted())") }
            walk.frameDurations = []
            walk.firstVideoTime = videoTraf.baseDecodeTime
            walk.domainStart = walk.playlistTime
            walk.lastIDRTime = nil
        }
        let frame = Double(videoTraf.samples.first?.duration ?? 0) / ts
        let mediaTime = Double(Int64(bitPattern: videoTraf.baseDecodeTime &- walk.firstVideoTime!)) / ts
        if abs(mediaTime - (walk.playlistTime - walk.domainStart)) > frame + 0.0005 {
            error("S8", s.at, "media time \(mediaTime) s vs playlist time \(walk.playlistTime - walk.domainStart) s")
        }
        walk.playlistTime += s.entry.duration ?? 0
        if actual > Double(targetDuration) + 0.5 { error("S9", s.at, "lasts \(actual) s, over TARGETDURATION + 0.5 s") }
        if let extinf = s.entry.duration, abs(extinf - actual) > 0.0005 {
            report(abs(extinf - actual) > frame ? .error : .warning, "S9", s.at, "EXTINF \(extinf) vs actual \(actual) s")
        }
    }

    /// S10–S12: length-prefixed NALs, an IDR first and flagged, sync flags that match;
    /// S17: IDRs at most 2 s apart, one frame duration per domain.
    private mutating func checkVideoSamples(_ s: SegmentUnderCheck, _ videoTraf: ParsedSegment.TrackFragment,
                                            _ video: ParsedInit.Track, walk: inout MediaWalk) {
        let ts = Double(video.timescale)
        var time = videoTraf.baseDecodeTime
        for (n, sample) in videoTraf.samples.enumerated() {
            defer { time &+= UInt64(sample.duration) }
            let data = Array(s.bytes[sample.range.clamped(to: 0..<s.bytes.count)])
            let units: [ArraySlice<UInt8>]
            do { units = try H264.splitLengthPrefixed(data, lengthSize: max(video.nalLengthSize, 1)) } catch {
                self.error("S12", s.at, "video sample \(n): \(error)"); continue
            }
            // A start code read as a length leaves a NAL whose header says type 0.
            if units.contains(where: { H264.nalType($0) == 0 }) { error("S12", s.at, "video sample \(n) holds a NAL of type 0 (Annex B start code?)") }
            let hasIDR = units.contains { H264.nalType($0) == H264.NALType.idr.rawValue }
            if n == 0 && !(hasIDR && sample.isSync && (sample.flags >> 24) & 3 == 2) {
                error("S10", s.at, "first video sample is not a flagged IDR")
            }
            if hasIDR != sample.isSync { error("S11", s.at, "video sample \(n): IDR=\(hasIDR) but sync flag=\(sample.isSync)") }
            if hasIDR {
                if let last = walk.lastIDRTime, Double(Int64(bitPattern: time &- last)) / ts > 2.0 + 0.0005 {
                    warning("S17", s.at, "IDR interval \(Double(Int64(bitPattern: time &- last)) / ts) s exceeds 2 s")
                }
                walk.lastIDRTime = time
            }
            // The last frame of a domain or of the stream gets a nominal duration.
            if !(s.endsDomain && n == videoTraf.samples.count - 1) { walk.frameDurations.insert(sample.duration) }
            walk.minFrameDuration = min(walk.minFrameDuration ?? sample.duration, sample.duration)
        }
    }

    /// S13: the audio track's own rules; S14–S15: sound starts and ends with the pictures.
    private mutating func checkSync(_ s: SegmentUnderCheck, video videoTraf: ParsedSegment.TrackFragment, timescale: UInt32,
                                    audio audioTraf: ParsedSegment.TrackFragment, _ audio: ParsedInit.Track, walk: inout MediaWalk) {
        checkAudio(audioTraf, audio, bytes: s.bytes, at: s.at)
        let ts = Double(timescale)
        let vStart = Double(videoTraf.baseDecodeTime) / ts, vEnd = vStart + Double(videoTraf.duration) / ts
        let aStart = Double(audioTraf.baseDecodeTime) / Double(audio.timescale)
        let aEnd = aStart + Double(audioTraf.duration) / Double(audio.timescale)
        let aacFrame = 1024.0 / Double(audio.timescale)
        if s.index == 0 {
            if aStart > vStart + 0.0005 { error("S15", s.at, "audio starts \(aStart - vStart) s after video") }
            if vStart - aStart > 0.1 + aacFrame { error("S15", s.at, "video starts \(vStart - aStart) s after audio") }
            walk.avOffset = vStart - aStart
        }
        // Within one AAC frame plus the constant priming offset (S14); the offset itself
        // cannot drift because tfdt continuity (S7) is exact.
        let allowed = aacFrame + abs(walk.avOffset ?? 0) + 0.0005
        if abs(vStart - aStart) > allowed { error("S14", s.at, "audio starts \(aStart - vStart) s from video") }
        if abs(vEnd - aEnd) > allowed { error("S14", s.at, "audio ends \(aEnd - vEnd) s from video end") }
    }

    /// An audio rendition's segment (no pictures to time it): S13 on its sound, S9 on its
    /// EXTINF against the sound it holds.
    private mutating func checkAudioRendition(_ s: SegmentUnderCheck, _ traf: ParsedSegment.TrackFragment, _ audio: ParsedInit.Track) {
        checkAudio(traf, audio, bytes: s.bytes, at: s.at)
        let actual = Double(traf.duration) / Double(audio.timescale)
        if let extinf = s.entry.duration, abs(extinf - actual) > 0.0005 {
            error("S9", s.at, "EXTINF \(extinf) vs actual \(actual) s of sound")
        }
    }

    /// The bytes a segment entry names: the whole file, or its EXT-X-BYTERANGE (P8, §4.4.4.2:
    /// without an offset, the range follows the previous one of the same URI).
    mutating func byteRange(of entry: ParsedPlaylist.Segment, in file: [UInt8], uri: String,
                            previous: inout (uri: String, end: Int)?) -> [UInt8]? {
        guard let text = entry.byteRange else { previous = nil; return file }
        guard let range = HLSValue.byteRange(text) else { return nil }  // reported with the playlist
        let start: UInt64
        if let offset = range.offset { start = offset } else if let previous, previous.uri == uri {
            start = UInt64(previous.end)
        } else {
            error("P8", uri, "EXT-X-BYTERANGE without an offset does not follow a range of the same file")
            return nil
        }
        guard start <= UInt64(file.count), range.length <= UInt64(file.count) - start else {
            error("P8", uri, "EXT-X-BYTERANGE \(text) lies past the end of the file (\(file.count) bytes)")
            return nil
        }
        previous = (uri, Int(start + range.length))
        return Array(file[Int(start)..<Int(start + range.length)])
    }

    mutating func checkTraf(_ traf: ParsedSegment.TrackFragment, at: String, known: [ParsedInit.Track]) {
        if !known.contains(where: { $0.trackID == traf.trackID }) { error("I3", at, "traf for unknown track \(traf.trackID)") }
        if traf.tfdtCount != 1 { error("S3", at, "traf \(traf.trackID) has \(traf.tfdtCount) tfdt") }
        if traf.trunCount < 1 { error("S3", at, "traf \(traf.trackID) has no trun") }
        if traf.tfhdFlags & 0x02_0000 == 0 || traf.tfhdFlags & 0x01 != 0 {
            error("S4", at, "tfhd of track \(traf.trackID) is not default-base-is-moof")
        }
        if !traf.dataInsideMdat { error("S4", at, "track \(traf.trackID) sample data lies outside the mdat") }
        if traf.tfdtVersion != 1 { warning("S6", at, "tfdt version 0 wraps after 2^32 ticks") }
        if traf.baseDecodeTime >= 1 << 63 { error("S6", at, "tfdt \(traf.baseDecodeTime) is a negative time written unsigned") }
        if traf.samples.contains(where: { $0.duration == 0 }) { error("S5", at, "track \(traf.trackID) has a zero sample duration") }
        if traf.samples.contains(where: { $0.compositionOffset < 0 }) { warning("S16", at, "negative composition offset") }
    }

    mutating func checkAudio(_ traf: ParsedSegment.TrackFragment, _ audio: ParsedInit.Track, bytes: [UInt8], at: String) {
        for (n, sample) in traf.samples.enumerated() {
            let head = sample.range.lowerBound >= 0 && sample.range.lowerBound + 1 < bytes.count ? (bytes[sample.range.lowerBound], bytes[sample.range.lowerBound + 1]) : (0, 0)
            if head.0 == 0xFF && head.1 & 0xF0 == 0xF0 { error("S13", at, "audio sample \(n) carries an ADTS header") }
            if Int(audio.timescale) == audio.sampleRate && sample.duration != 1024 {
                // Every AAC-LC access unit decodes to 1024 samples.
                warning("S13", at, "audio sample \(n) lasts \(sample.duration) ticks, not 1024")
            }
        }
    }

    /// The init segment the playlist's first EXT-X-MAP names, read and checked (I1–I11):
    /// what the variant is (a dropped rung may name another's before its first segment).
    mutating func checkMap(_ p: ParsedPlaylist, path: String, into summary: inout MediaSummary) -> ParsedInit? {
        guard !p.segments.isEmpty, let mapURI = p.mapURI else { return nil }
        let initPath = resolve(mapURI, against: path)
        guard var initBytes = read(initPath, "the EXT-X-MAP") else { return nil }
        // BYTERANGE="n@o" (§4.4.4.5): the init is that part of the file, which must hold it (P8).
        if let text = p.value("EXT-X-MAP").flatMap({ ParsedPlaylist.attributes($0)["BYTERANGE"] }) {
            guard let range = HLSValue.byteRange(text), let offset = range.offset else {
                error("P7", initPath, "EXT-X-MAP BYTERANGE \"\(text.prefix(40))\" is not n@o in decimal-integers")
                return nil
            }
            guard offset <= UInt64(initBytes.count), range.length <= UInt64(initBytes.count) - offset else {
                error("P8", initPath, "EXT-X-MAP BYTERANGE \(text) lies past the end of the file (\(initBytes.count) bytes)")
                return nil
            }
            initBytes = Array(initBytes[Int(offset)..<Int(offset + range.length)])
        }
        return checkInit(initBytes, initPath, into: &summary)
    }

    /// I1–I11.
    mutating func checkInit(_ bytes: [UInt8], _ at: String, into summary: inout MediaSummary) -> ParsedInit? {
        let parsed: ParsedInit
        do { parsed = try ParsedInit(bytes: bytes) } catch { self.error("I1", at, "\(error)"); return nil }
        if parsed.topLevel != ["ftyp", "moov"] { error("I1", at, "top-level boxes \(parsed.topLevel) are not ftyp, moov") }
        let brands = Set([parsed.majorBrand] + parsed.compatibleBrands)
        if brands.isDisjoint(with: ["iso6", "iso7", "iso8", "iso9", "cmfc", "cmf2"]) { error("I2", at, "no iso6+ or CMAF brand") }
        if parsed.tracks.isEmpty { error("I3", at, "no trak") }
        if !parsed.mvexFollowsTraks { error("I3", at, "mvex missing or before a trak") }
        if parsed.mvhdDuration != 0 { error("I4", at, "mvhd duration \(parsed.mvhdDuration)") }
        for track in parsed.tracks {
            let t = "\(at) track \(track.trackID)"
            if track.tkhdDuration != 0 { error("I4", t, "tkhd duration \(track.tkhdDuration)") }
            if !track.emptyTables || track.sampleEntryCount < 1 { error("I5", t, "sample tables not empty, or no sample entry") }
            let trex = parsed.trex.filter { $0.trackID == track.trackID }
            if trex.count != 1 || !(1...UInt32(max(track.sampleEntryCount, 1))).contains(trex[0].defaultSampleDescriptionIndex) {
                error("I6", t, "needs exactly one trex with a valid sample description index")
            }
            if !track.selfContainedReferences { error("I7", t, "data reference is not self-contained") }
            if track.timescale == 0 { error("I8", t, "timescale 0") }
            if track.editListEntries > 1 { error("I12", t, "edit list with \(track.editListEntries) entries") }
            if track.editListEntries == 1 { warning("I12", t, "an edit list: hls.js ignores it") }
        }
        let videos = parsed.tracks.filter { $0.handler == "vide" }, audios = parsed.tracks.filter { $0.handler == "soun" }
        // A variant has one picture track and at most one sound track; an audio
        // rendition, one sound track alone.
        if videos.count > 1 || audios.count > 1 || videos.count + audios.count == 0 || parsed.tracks.count != videos.count + audios.count {
            error("I9", at, "\(videos.count) video and \(audios.count) audio tracks")
        }
        if let v = videos.first { checkAVC(v, at, into: &summary) }
        if let a = audios.first { checkAAC(a, at, into: &summary) }
        return parsed
    }

    mutating func checkAVC(_ v: ParsedInit.Track, _ at: String, into summary: inout MediaSummary) {
        if v.sampleEntry != "avc1" { report(v.sampleEntry == "avc3" ? .warning : .error, "I10", at, "sample entry \(v.sampleEntry), expected avc1") }
        if v.timescale % 90000 != 0 && v.timescale % 1000 != 0 { warning("I8", at, "video timescale \(v.timescale)") }
        guard v.avcConfigVersion == 1, let sps = v.sps.first, !v.pps.isEmpty else {
            return error("I10", at, "avcC needs version 1 and at least one SPS and PPS")
        }
        if ![1, 2, 4].contains(v.nalLengthSize) { error("I10", at, "NAL length size \(v.nalLengthSize)") }
        if sps.count < 4 || sps[1] != v.avcProfile || sps[2] != v.avcCompatibility || sps[3] != v.avcLevel {
            error("I10", at, "avcC profile/compatibility/level differ from the SPS")
        }
        do {
            let parsed = try H264SPS(nal: sps[...])
            if parsed.width != v.width || parsed.height != v.height {
                error("I10", at, "sample entry \(v.width)x\(v.height) but SPS \(parsed.width)x\(parsed.height)")
            }
            summary.videoSize = (parsed.width, parsed.height)
            summary.videoCodec = parsed.codecString
            if parsed.profileIdc > 100 || parsed.levelIdc > 52 { warning("C8", at, "above High@5.2") }
        } catch { self.error("I10", at, "SPS: \(error)") }
    }

    mutating func checkAAC(_ a: ParsedInit.Track, _ at: String, into summary: inout MediaSummary) {
        if a.sampleEntry != "mp4a" { return error("I11", at, "audio sample entry \(a.sampleEntry)") }
        if a.objectTypeIndication != 0x40 || a.streamType != 5 {
            error("I11", at, "esds objectTypeIndication 0x\(String(a.objectTypeIndication, radix: 16)) streamType \(a.streamType)")
        }
        do {
            let config = try AudioSpecificConfig(bytes: a.audioConfig)
            if config.sampleRate != a.sampleRate || config.channelConfiguration != a.channelCount {
                error("I11", at, "AudioSpecificConfig \(config.sampleRate) Hz/\(config.channelConfiguration) ch vs mp4a \(a.sampleRate) Hz/\(a.channelCount) ch")
            }
            if Int(a.timescale) != a.sampleRate { warning("I8", at, "audio timescale \(a.timescale) is not the sample rate") }
            summary.audioCodec = config.codecString
            if a.timescale > 0 { summary.aacFrameSeconds = 1024 / Double(a.timescale) }
        } catch { self.error("I11", at, "no usable AudioSpecificConfig: \(error)") }
    }
}
