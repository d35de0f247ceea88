
/// What `checkAudioRenditions` found of one EXT-X-MEDIA audio rendition.
struct AudioRenditionSummary {
    var name: String
    var uri: String
    var media: MediaSummary?
}

extension StreamChecker {
    /// V4 on every EXT-X-MEDIA, then each audio rendition's playlist and files as a media
    /// playlist of its own. Returns the audio renditions by GROUP-ID.
    mutating func checkAudioRenditions(_ top: ParsedPlaylist, _ path: String) -> [String: [AudioRenditionSummary]] {
        var groups: [String: [AudioRenditionSummary]] = [:]
        var defaults: [String: Int] = [:]
        for tag in top.tags("EXT-X-MEDIA") {
            let at = "\(path):\(tag.line)"
            let a = ParsedPlaylist.attributes(tag.value ?? "")
            guard let type = a["TYPE"], let group = a["GROUP-ID"], let name = a["NAME"] else {
                error("V4", at, "EXT-X-MEDIA needs TYPE, GROUP-ID and NAME"); continue
            }
            if a["DEFAULT"] == "YES" {
                defaults[type + " " + group, default: 0] += 1
                if defaults[type + " " + group] == 2 { error("V4", at, "a second DEFAULT=YES in group \(Self.quote(group))") }
                if let auto = a["AUTOSELECT"], auto != "YES" { error("V4", at, "DEFAULT=YES with AUTOSELECT=\(auto)") }
            }
            if a["CHANNELS"] != nil && type != "AUDIO" { error("V4", at, "CHANNELS on a \(type) rendition") }
            if a["FORCED"] != nil && type != "SUBTITLES" { error("V4", at, "FORCED on a \(type) rendition") }
            if type != "VIDEO" && a["LANGUAGE"] == nil { warning("V4", at, "no LANGUAGE") }
            guard type == "AUDIO" else { continue }
            if groups[group, default: []].contains(where: { $0.name == name }) { error("V4", at, "NAME \(Self.quote(name)) twice in group \(Self.quote(group))") }
            let media = a["URI"].flatMap { uri in checkMediaPlaylistFile(uri) }
            if let media, media.hasVideo { error("V4", a["URI"] ?? at, "an audio rendition with pictures") }
            groups[group, default: []].append(AudioRenditionSummary(name: name, uri: a["URI"] ?? at, media: media))
        }
        return groups
    }

    /// V3, C3, V5 and V7 for a variant that names an audio group.
    mutating func checkAudioGroup(_ a: [String: String], bandwidth: Int, media: MediaSummary, groups: [String: [AudioRenditionSummary]], at: String) {
        guard let group = a["AUDIO"] else { return }
        guard let renditions = groups[group] else { return error("V3", at, "AUDIO=\(Self.quote(group)) names no EXT-X-MEDIA audio group") }
        let codecs = (a["CODECS"] ?? "").split(separator: ",").map { String($0).lowercased() }
        let sounds = renditions.compactMap(\.media)
        for codec in Set(sounds.compactMap(\.audioCodec)) where !codecs.contains(codec) {
            error("C3", at, "CODECS lacks \(codec) (its audio group's)")
        }
        if media.hasAudio && !sounds.isEmpty {
            warning("V5", at, "sound in the variant's own segments and in audio group \(Self.quote(group))")
        }
        // Every combination a player may choose must fit BANDWIDTH (§4.4.6.2.1).
        if let loudest = sounds.map(\.peakBitrate).max(), media.peakBitrate + loudest > bandwidth {
            error("V7", at, "BANDWIDTH \(bandwidth) is below the measured peak of the pictures and their sound, \(media.peakBitrate + loudest)")
        }
    }

    /// V6: every variant's segment k starts at the same time and lasts as long (a ladder's
    /// rungs cut at the same frames), and every rendition's discontinuities fall on the
    /// same segments (matching discontinuity sequence numbers, §6.2.4); S14 across
    /// renditions: each audio rendition's
    /// segment k starts with the pictures' within an AAC frame of the offset it starts at.
    mutating func checkAlignment(variants: [(uri: String, media: MediaSummary)], audio: [String: [AudioRenditionSummary]]) {
        guard let (firstURI, first) = variants.first else { return }
        let sounds = audio.values.flatMap { $0 }.compactMap { sound in sound.media.map { (uri: sound.uri, media: $0) } }
        for (uri, media) in Array(variants.dropFirst()) + sounds {
            let count = min(first.segmentTimes.count, media.segmentTimes.count)
            let here = media.discontinuities.filter { $0 < count }, there = first.discontinuities.filter { $0 < count }
            if here != there {
                error("V6", uri, "discontinuities before segments \(here.map { $0 + 1 }), but \(there.map { $0 + 1 }) in \(firstURI)")
            }
        }
        for (uri, media) in variants.dropFirst() {
            for (k, pair) in zip(first.segmentTimes, media.segmentTimes).enumerated() {
                guard let a = pair.0, let b = pair.1 else { continue }
                if abs(a.start - b.start) > 0.0005 || abs(a.duration - b.duration) > 0.0005 {
                    error("V6", uri, "segment \(k + 1) is \(b.start) s + \(b.duration) s, but \(a.start) s + \(a.duration) s in \(firstURI)")
                    break
                }
            }
        }
        for sound in audio.values.flatMap({ $0 }).compactMap(\.media) {
            let frame = sound.aacFrameSeconds ?? 1024.0 / 48_000
            var offset: Double?
            for (k, pair) in zip(first.segmentTimes, sound.segmentTimes).enumerated() {
                guard let v = pair.0, let s = pair.1 else { continue }
                let here = v.start - s.start
                if offset == nil { offset = here }
                if abs(here) > frame + abs(offset ?? 0) + 0.0005 {
                    error("S14", "audio segment \(k + 1)", "starts \(-here) s from the pictures' segment \(k + 1) in \(firstURI)")
                    break
                }
            }
        }
    }
}
