/* libsrt (Debian's libsrt-openssl-dev: libsrt.a on OpenSSL, linked statically through
 * toolchain/deps.sh's srt.pc) for SRT destinations: a caller in live mode. */
#ifndef ONAIR_CSRT_SHIM_H
#define ONAIR_CSRT_SHIM_H
#include <srt/srt.h>
#if __has_include(<onair-deps.h>)
#include <onair-deps.h>
#endif

static inline const char *onair_debian_libsrt(void) {
#ifdef ONAIR_DEBIAN_LIBSRT_OPENSSL
    return ONAIR_DEBIAN_LIBSRT_OPENSSL;
#else
    return "";
#endif
}
#endif
