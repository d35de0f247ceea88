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
#endif
