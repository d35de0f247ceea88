import HLS
import Layout

/// What a fetch copies from the URL it was given: a media playlist itself; or from a
/// multivariant playlist the variant `VariantChoice` picks and, when its sound is a
/// rendition of its own (a quality ladder: `AUDIO="group"`), that rendition beside it.
struct FetchChoice {
    /// The variant's media playlist (or the URL's own).
    var media: String
    /// The media playlist as first read.
    var parsed: ParsedPlaylist?
    /// The audio rendition's media playlist, if the variant plays with one.
    var audio: String?
    /// The local copy's `index.m3u8` when there are two playlists: the variant and its
    /// sound, as the source listed them, under their local names.
    var localIndex: String?
}

extension Fetcher {
    func choose() throws -> FetchChoice {
        let top = try parsePlaylist(options.url)
        guard top.isMultivariant else { return FetchChoice(media: options.url, parsed: top) }
        guard let (variant, reason) = VariantChoice.choose(top.variants, maxBitrate: options.maxBitrate, maxSize: options.maxSize) else {
            throw FetchError("\(options.url): a multivariant playlist without variants")
        }
        say("fetch: variant \(reason)")
        // A rung the heat dropped for a while carried the next rung's pictures under that
        // rung's init (EXT-X-MAP after a discontinuity); one copy has one init, so the
        // highest rung below it with pictures of its own throughout is taken instead.
        var lower = VariantChoice.below(variant, in: top.variants)[...]
        var chosen = variant
        var parsed = try parsePlaylist(Self.resolve(variant.uri, against: options.url))
        while !parsed.ownInitThroughout(), let next = lower.popFirst() {
            say("fetch: \(VariantChoice.describe(chosen)) changes its init mid-stream (a rung dropped for a while); taking \(VariantChoice.describe(next))")
            chosen = next
            parsed = try parsePlaylist(Self.resolve(next.uri, against: options.url))
        }
        let media = Self.resolve(chosen.uri, against: options.url)
        // RFC 8216bis §4.4.6.1: the group's DEFAULT=YES rendition, else its first; one
        // without a URI means the sound is in the variant's own segments.
        let group = top.tags("EXT-X-MEDIA").filter { tag in
            let a = ParsedPlaylist.attributes(tag.value ?? "")
            return a["TYPE"] == "AUDIO" && a["GROUP-ID"] != nil && a["GROUP-ID"] == chosen.attributes["AUDIO"]
        }
        guard let sound = group.first(where: { ParsedPlaylist.attributes($0.value ?? "")["DEFAULT"] == "YES" }) ?? group.first,
              let uri = ParsedPlaylist.attributes(sound.value ?? "")["URI"] else {
            return FetchChoice(media: media, parsed: parsed)
        }
        say("fetch: sound \(ParsedPlaylist.attributes(sound.value ?? "")["NAME"] ?? uri), a rendition of its own")
        let index = ["#EXTM3U", top.value("EXT-X-VERSION").map { "#EXT-X-VERSION:" + $0 },
                     top.tags("EXT-X-INDEPENDENT-SEGMENTS").isEmpty ? nil : "#EXT-X-INDEPENDENT-SEGMENTS",
                     "#EXT-X-MEDIA:" + Self.replacingURI(in: sound.value ?? "", with: StreamLayout.path(StreamLayout.playlist, in: StreamLayout.audio)),
                     top.lines[chosen.line - 1], StreamLayout.playlist].compactMap { $0 }
        return FetchChoice(media: media, parsed: parsed, audio: Self.resolve(uri, against: options.url),
                           localIndex: index.joined(separator: "\n") + "\n")
    }

    /// An attribute list with its `URI="…"` (a quoted string, §4.2) replaced.
    static func replacingURI(in attributes: String, with uri: String) -> String {
        guard let start = attributes.hasPrefix("URI=\"") ? attributes.firstRange(of: "URI=\"") : attributes.firstRange(of: ",URI=\""),
              let close = attributes[start.upperBound...].firstIndex(of: "\"") else { return attributes }
        return String(attributes[..<start.upperBound]) + uri + String(attributes[close...])
    }
}
