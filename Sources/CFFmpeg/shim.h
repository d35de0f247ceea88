// libavcodec/libavutil for Swift. The static inline helpers exist because Swift cannot
// import function-like macros (AVERROR, AVERROR_EOF) or C variadic functions.
#ifndef ONAIR_CFFMPEG_SHIM_H
#define ONAIR_CFFMPEG_SHIM_H
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/opt.h>
#include <libavutil/hwcontext.h>
#include <libavutil/channel_layout.h>
#include <libavutil/imgutils.h>
#include <libavutil/error.h>
#include <libswscale/swscale.h>

static inline int onair_averror(int posix_errno) { return AVERROR(posix_errno); }
static inline int onair_averror_eof(void) { return AVERROR_EOF; }
static inline int onair_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline void onair_set_mono_layout(AVChannelLayout *layout, int channels) {
    av_channel_layout_default(layout, channels);
}

// The Debian source versions toolchain/deps.sh built or took the static libraries from;
// "" when the build links Debian's shared libraries instead (a bare `swift build`).
#if __has_include(<onair-deps.h>)
#include <onair-deps.h>
#endif
static inline const char *onair_debian_ffmpeg(void) {
#ifdef ONAIR_DEBIAN_FFMPEG
    return ONAIR_DEBIAN_FFMPEG;
#else
    return "";
#endif
}
static inline const char *onair_debian_x264(void) {
#ifdef ONAIR_DEBIAN_X264
    return ONAIR_DEBIAN_X264;
#else
    return "";
#endif
}
static inline const char *onair_debian_suite(void) {
#ifdef ONAIR_DEBIAN_SUITE
    return ONAIR_DEBIAN_SUITE;
#else
    return "";
#endif
}
#endif
