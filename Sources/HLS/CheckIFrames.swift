import Media
import MP4

extension StreamChecker {
    /// V8 and V10 on an `EXT-X-I-FRAME-STREAM-INF`, then V9 on the playlist it names.
    /// `variants` are the media playlists' summaries, which it must match in target
    /// duration and, once both have ended, in length.
    mutating func checkIFrameStream(_ stream: ParsedPlaylist.Variant, _ path: String, variants: [MediaSummary]) {
        let at = "\(path):\(stream.line)"
        let a = stream.attributes
        for name in ["FRAME-RATE", "AUDIO", "SUBTITLES", "CLOSED-CAPTIONS"] where a[name] != nil {
            error("V8", at, "EXT-X-I-FRAME-STREAM-INF has \(name)")
        }
        for name in ["CODECS", "RESOLUTION"] where a[name] == nil { error("V2", at, "no \(name)") }
        guard let bandwidth = a["BANDWIDTH"].flatMap(HLSValue.integer) else { return error("V8", at, "no decimal-integer BANDWIDTH") }
        guard !stream.uri.isEmpty else { return error("V8", at, "no URI") }
        guard let bytes = read(stream.uri, "the I-frame playlist"), let playlist = checkText(bytes, stream.uri) else { return }
        if playlist.isMultivariant { return error("P10", stream.uri, "an I-frame URI points at a multivariant playlist") }
        if playlist.tags("EXT-X-I-FRAMES-ONLY").isEmpty { return error("V8", stream.uri, "no EXT-X-I-FRAMES-ONLY") }
        let media = checkMediaPlaylist(playlist, stream.uri)
        checkVariant(a.filter { $0.key != "FRAME-RATE" }, bandwidth: bandwidth, media: media, at: at, rule: "V10")
        if let mine = media.targetDuration, let theirs = variants.compactMap(\.targetDuration).first, mine != theirs {
            error("V10", stream.uri, "TARGETDURATION \(mine) but the variants' is \(theirs)")
        }
        if media.isEnded, let variant = variants.first(where: \.isEnded), abs(media.totalSeconds - variant.totalSeconds) > 0.001 * Double(playlist.segments.count) {
            error("V9", stream.uri, "the I-frames last \(media.totalSeconds) s, the variant \(variant.totalSeconds) s")
        }
    }

    /// V9: each entry is a byte range that starts at a `moof` and covers its first video
    /// sample, an IDR flagged as a sync sample; EXTINF is the time to the next I-frame.
    /// V10: bit rates are the ranges' sizes over their durations.
    mutating func checkIFrames(_ p: ParsedPlaylist, path: String, targetDuration: Int) -> MediaSummary {
        var summary = MediaSummary()
        guard let initSegment = checkMap(p, path: path, into: &summary) else { return summary }
        guard let video = initSegment.track("vide") else { error("V9", path, "its EXT-X-MAP has no video track"); return summary }
        // The init segment may describe the muxed sound too; the I-frames carry none, so
        // CODECS names only the video (§4.4.6.3).
        summary.audioCodec = nil
        var meter = BitrateMeter(timescale: 1000, targetDuration: max(targetDuration, 1))
        var previousRange: (uri: String, end: Int)?
        // Each I-frame's decode time and the video after it in its file, for EXTINF.
        var frames: [(at: String, extinf: Double?, time: UInt64, rest: UInt64, discontinuity: Bool)] = []
        for entry in p.segments {
            let at = "\(resolve(entry.uri, against: path)) (\(path):\(entry.line))"
            guard entry.byteRange != nil else { error("V9", at, "an I-frame without EXT-X-BYTERANGE"); continue }
            guard let file = read(resolve(entry.uri, against: path), "the segment"),
                  let bytes = byteRange(of: entry, in: file, uri: resolve(entry.uri, against: path), previous: &previousRange) else { continue }
            meter.add(bytes: bytes.count, ticks: Int64(((entry.duration ?? 0) * 1000).rounded()))
            // byteRange(of:) left the range's end there.
            let start = (previousRange?.end ?? bytes.count) - bytes.count
            guard bytes.count >= 8, ["moof", "styp"].contains(String(decoding: bytes[4..<8], as: UTF8.self)) else {
                error("V9", at, "the range does not start at a moof"); continue
            }
            // The moof is read from the whole file: the range may stop inside the mdat.
            let rest: ParsedSegment
            do { rest = try ParsedSegment(bytes: Array(file[start...]), trex: initSegment.trex) } catch {
                self.error("V9", at, "\(error)"); continue
            }
            guard let traf = rest.fragments.first?.trafs.first(where: { $0.trackID == video.trackID }), let sample = traf.samples.first else {
                error("V9", at, "the first moof has no video sample"); continue
            }
            if sample.range.upperBound > bytes.count {
                error("V9", at, "the range ends at \(bytes.count), before its I-frame's last byte (\(sample.range.upperBound))")
                continue
            }
            let nals = try? H264.splitLengthPrefixed(Array(bytes[sample.range]), lengthSize: max(video.nalLengthSize, 1))
            if !(sample.isSync && (sample.flags >> 24) & 3 == 2 && (nals?.contains { H264.nalType($0) == H264.NALType.idr.rawValue } ?? false)) {
                error("V9", at, "the first video sample is not a flagged IDR")
            }
            let after = rest.traf(video.trackID).reduce(UInt64(0)) { $0 &+ $1.duration }
            frames.append((at, entry.duration, traf.baseDecodeTime, after, entry.discontinuity))
        }
        let scale = Double(video.timescale)
        for (i, frame) in frames.enumerated() {
            guard let extinf = frame.extinf else { continue }
            // The time to the next I-frame; before a discontinuity or at the end, to the end
            // of the video that follows it in its file.
            let next = i + 1 < frames.count && !frames[i + 1].discontinuity ? frames[i + 1] : nil
            let expected = next.map { Double(Int64(bitPattern: $0.time &- frame.time)) / scale } ?? Double(frame.rest) / scale
            if abs(extinf - expected) > 0.0005 {
                error("V9", frame.at, "EXTINF \(extinf) but the next I-frame comes after \(expected) s")
            }
        }
        summary.peakBitrate = meter.peak
        summary.averageBitrate = meter.average
        return summary
    }
}
