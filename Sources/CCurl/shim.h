// libcurl for Swift. curl_easy_setopt and curl_easy_getinfo are variadic, which Swift
// cannot call, so each argument type onair passes gets a typed wrapper here.
#ifndef ONAIR_CCURL_SHIM_H
#define ONAIR_CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode onair_curl_set_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode onair_curl_set_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode onair_curl_set_pointer(CURL *curl, CURLoption option, const void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode onair_curl_set_size(CURL *curl, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode onair_curl_set_write_callback(CURL *curl, size_t (*callback)(char *, size_t, size_t, void *), void *context) {
    CURLcode code = curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(curl, CURLOPT_WRITEDATA, context);
}
static inline CURLcode onair_curl_set_header_callback(CURL *curl, size_t (*callback)(char *, size_t, size_t, void *), void *context) {
    CURLcode code = curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(curl, CURLOPT_HEADERDATA, context);
}
static inline long onair_curl_response_code(CURL *curl) {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

/// CURLVERSION_NOW is a macro naming the newest enum value, which Swift does not import.
static inline curl_version_info_data *onair_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }

// The Debian source versions toolchain/deps.sh built or took the static libraries from;
// "" when the build links Debian's shared libraries instead (a bare `swift build`).
#if __has_include(<onair-deps.h>)
#include <onair-deps.h>
#endif
static inline const char *onair_debian_curl(void) {
#ifdef ONAIR_DEBIAN_CURL
    return ONAIR_DEBIAN_CURL;
#else
    return "";
#endif
}
static inline const char *onair_debian_openssl(void) {
#ifdef ONAIR_DEBIAN_LIBSSL
    return ONAIR_DEBIAN_LIBSSL;
#else
    return "";
#endif
}
#endif
