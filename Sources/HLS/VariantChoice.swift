/// A picture size limit (`--max-size`, `max_size=`).
public struct PictureSize: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `WIDTHxHEIGHT`, both positive; nil otherwise.
    public init?(parsing text: String) {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false).compactMap { Int($0) }
        guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { return nil }
        self.init(width: parts[0], height: parts[1])
    }
}

/// Which variant of a multivariant playlist to keep, as an offline download picks one
/// (the source talk, WWDC20 "Discover how to download and play HLS offline"): the highest
/// bit rate not above `maxBitrate`, then, of those, none larger than `maxSize`; when
/// nothing fits, the smallest there is. Says which and why.
public enum VariantChoice {
    public static func choose(_ variants: [ParsedPlaylist.Variant], maxBitrate: Int?, maxSize: PictureSize?)
        -> (variant: ParsedPlaylist.Variant, reason: String)? {
        func size(_ v: ParsedPlaylist.Variant) -> (Int, Int)? {
            let parts = v.attributes["RESOLUTION"]?.split(separator: "x").compactMap { Int($0) } ?? []
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }
        guard !variants.isEmpty else { return nil }
        let fitting = variants.filter { v in
            let rateFits = maxBitrate.map { bandwidth(v) <= $0 } ?? true
            let sizeFits = maxSize.map { max in size(v).map { $0.0 <= max.width && $0.1 <= max.height } ?? true } ?? true
            return rateFits && sizeFits
        }
        let limits = [maxBitrate.map { "at most \($0) b/s" }, maxSize.map { "at most \($0.width)x\($0.height)" }].compactMap { $0 }
        if let best = fitting.max(by: { bandwidth($0) < bandwidth($1) }) {
            let why = limits.isEmpty ? "the highest bit rate" : "the highest bit rate " + limits.joined(separator: " and ")
            return (best, "\(describe(best)): \(why), of \(variants.count)")
        }
        let smallest = variants.min(by: { bandwidth($0) < bandwidth($1) })!
        return (smallest, "\(describe(smallest)): the lowest bit rate, as none is \(limits.joined(separator: " and "))")
    }

    /// Where to turn when `variant` will not do (a rung the heat dropped for a while): the
    /// others at or below its bit rate, highest first.
    public static func below(_ variant: ParsedPlaylist.Variant, in variants: [ParsedPlaylist.Variant]) -> [ParsedPlaylist.Variant] {
        variants.filter { $0.uri != variant.uri && bandwidth($0) <= bandwidth(variant) }.sorted { bandwidth($0) > bandwidth($1) }
    }

    static func bandwidth(_ v: ParsedPlaylist.Variant) -> Int { v.attributes["BANDWIDTH"].flatMap { Int($0) } ?? 0 }

    public static func describe(_ v: ParsedPlaylist.Variant) -> String {
        let rate = v.attributes["BANDWIDTH"] ?? "?"
        return v.attributes["RESOLUTION"].map { "\($0) at \(rate) b/s" } ?? "\(rate) b/s"
    }
}
