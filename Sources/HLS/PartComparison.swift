import MP4

/// Whether a segment's parts are that segment (HLS_RULES LL6, RFC 8216bis §3.2): for each
/// track, the same samples with the same durations, flags, composition offsets and bytes,
/// and each part's tfdt where the samples before it end. nil when they are; what differs
/// otherwise. (`onair validate URL` and the tests.)
public func partsDiffer(parts: [[UInt8]], segment: [UInt8]) -> String? {
    do {
        let whole = try ParsedSegment(bytes: segment)
        let pieces = try parts.map { try ParsedSegment(bytes: $0) }
        for track in whole.fragments.first?.trafs.map(\.trackID) ?? [] {
            guard let wholeTrack = whole.traf(track).first else { return "track \(track): not in the segment" }
            var decodeTime = wholeTrack.baseDecodeTime
            var samples: [ParsedSegment.Sample] = [], data: [UInt8] = []
            for (n, (piece, bytes)) in zip(pieces, parts).enumerated() {
                guard let traf = piece.traf(track).first else { return "track \(track): not in part \(n)" }
                if !traf.samples.isEmpty && traf.baseDecodeTime != decodeTime {
                    return "track \(track), part \(n): tfdt \(traf.baseDecodeTime), the samples before end at \(decodeTime)"
                }
                decodeTime += traf.duration
                samples += traf.samples
                for sample in traf.samples { data += bytes[sample.range] }
            }
            if samples.map(\.duration) != wholeTrack.samples.map(\.duration) { return "track \(track): durations differ" }
            if samples.map(\.flags) != wholeTrack.samples.map(\.flags) { return "track \(track): flags differ" }
            if samples.map(\.compositionOffset) != wholeTrack.samples.map(\.compositionOffset) { return "track \(track): offsets differ" }
            if data != wholeTrack.samples.flatMap({ Array(segment[$0.range]) }) { return "track \(track): sample bytes differ" }
        }
        return nil
    } catch {
        return "unreadable: \(error)"
    }
}
