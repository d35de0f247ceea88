/// How each kind of HLS file is served and stored: its Content-Type (RFC 8216bis §4 for
/// playlists) and its cache policy. Playlists change at the same URL, so caches must
/// revalidate them; init and media segments never change once written, so a year (source
/// talk: "save bytes first, then make them visible"; HLS_RULES L11).
public enum MediaType {
    public static func of(_ path: String) -> (contentType: String, cacheControl: String) {
        if path.hasSuffix(".m3u8") { return ("application/vnd.apple.mpegurl", "no-cache") }
        if path.hasSuffix(".mp4") || path.hasSuffix(".m4s") { return ("video/mp4", "public, max-age=31536000, immutable") }
        if path.hasSuffix(".json") { return ("application/json", "no-cache") }
        if path.hasSuffix(".html") { return ("text/html; charset=utf-8", "no-cache") }
        // The poster changes at the same URL.
        if path.hasSuffix(".jpg") { return ("image/jpeg", "no-cache") }
        return ("application/octet-stream", "no-cache")
    }
}
