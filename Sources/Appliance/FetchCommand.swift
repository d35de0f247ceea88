import Fetch
import HLS

/// `onair fetch URL [options]` (an offline copy) and `onair fetch --list`.
extension CommandLineParser {
    static func parseFetch(_ arguments: [String]) throws -> Invocation {
        var url: String?
        var options = FetchOptions(url: "")
        var list = false
        var words = ArgumentCursor(arguments) { "fetch: \($0) needs a value" }
        func value(_ flag: String) throws -> String { try words.value(for: flag) }
        while let argument = words.next() {
            switch argument {
            case "--out": options.out = try value(argument)
            case "--dir": options.dataDirectory = try value(argument)
            case "--list": list = true
            case "--follow": options.follow = true
            case "--max-bytes":
                let text = try value(argument)
                guard let bytes = ConfigFile.byteSize(text), bytes >= 1 << 20 else {
                    throw ConfigError.at(origin: "fetch", key: "--max-bytes", .expected("a size of 1M or more like 500M or 8G", got: quoted(text)))
                }
                options.maxBytes = bytes
            case "--max-bitrate":
                do { options.maxBitrate = try ConfigFile.bitrate(try value(argument)) } catch let error as ConfigError {
                    throw ConfigError.at(origin: "fetch", key: "--max-bitrate", error)
                }
            case "--max-size":
                let text = try value(argument)
                let parts = text.split(separator: "x").compactMap { Int($0) }
                guard parts.count == 2, parts.allSatisfy({ (1...16384).contains($0) }) else {
                    throw ConfigError.at(origin: "fetch", key: "--max-size", .expected("WIDTHxHEIGHT such as 1280x720", got: quoted(text)))
                }
                options.maxSize = PictureSize(width: parts[0], height: parts[1])
            case "--format":
                let text = try value(argument)
                guard let format = FetchOptions.Format(rawValue: text) else { throw ConfigError.at(origin: "fetch", key: "--format", .expected("mp4 or hls", got: quoted(text))) }
                options.format = format
            case "--keep-days":
                let text = try value(argument)
                guard let days = Int(text), (1...36_500).contains(days) else { throw ConfigError.at(origin: "fetch", key: "--keep-days", .expected("1…36500", got: quoted(text))) }
                options.keepDays = days
            case "--priority":
                let text = try value(argument)
                guard ["normal", "keep"].contains(text) else { throw ConfigError.at(origin: "fetch", key: "--priority", .expected("normal or keep", got: quoted(text))) }
                options.priority = text
            default:
                guard !argument.hasPrefix("-"), url == nil else { throw ConfigError.usage("fetch: unexpected '\(argument)' (see 'onair fetch --help')") }
                url = argument
            }
        }
        if list { return .fetchList(dataDirectory: options.dataDirectory) }
        guard let url else { throw ConfigError.usage("fetch: expected the URL of an HLS playlist (see 'onair fetch --help')") }
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { throw ConfigError.usage("fetch: \(quoted(url)) is not an http(s) URL") }
        options.url = url
        return .fetch(options)
    }

    public static let fetchUsage = """
    Usage: onair fetch URL [--out PATH] [--max-bitrate BITS] [--max-size WxH] [--follow]
                           [--max-bytes SIZE] [--format mp4|hls] [--keep-days N]
                           [--priority normal|keep] [--dir DIR]
           onair fetch --list [--dir DIR]

    Copies an fMP4 HLS stream (a multivariant or media playlist over http(s)) for offline
    use: the variant with the highest bit rate not above --max-bitrate and no larger than
    --max-size, with its audio rendition where its sound is one; every segment checked as
    it arrives; progress in media time. Killed or cut off, the same command continues
    where it was. --follow keeps fetching a live stream until its ENDLIST, or until the
    copy holds --max-bytes (default 4G), where it ends as if the stream had. --format mp4
    (default) writes one progressive MP4 (moov first); hls a playable local HLS copy
    (open its index.m3u8 where the sound is a rendition). Without --out, copies go to
    DIR/offline/ (DIR: the data directory, default ./var), where --list shows them.

    """
}
