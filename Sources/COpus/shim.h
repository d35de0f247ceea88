/* libopus (Debian's static archive): the sound of WebRTC viewers (RFC 7587). */
#ifndef ONAIR_COPUS_SHIM_H
#define ONAIR_COPUS_SHIM_H
#include <opus/opus.h>
#if __has_include(<onair-deps.h>)
#include <onair-deps.h>
#endif

/* opus_encoder_ctl is variadic, which Swift cannot call: one function per setting. */
static inline int onair_opus_set_bitrate(OpusEncoder *encoder, opus_int32 bits) {
    return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bits));
}
static inline int onair_opus_set_inband_fec(OpusEncoder *encoder, opus_int32 on) {
    return opus_encoder_ctl(encoder, OPUS_SET_INBAND_FEC(on));
}
static inline int onair_opus_set_packet_loss(OpusEncoder *encoder, opus_int32 percent) {
    return opus_encoder_ctl(encoder, OPUS_SET_PACKET_LOSS_PERC(percent));
}
static inline int onair_opus_lookahead(OpusEncoder *encoder) {
    opus_int32 samples = 0;
    return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(&samples)) == OPUS_OK ? samples : -1;
}

static inline const char *onair_debian_libopus(void) {
#ifdef ONAIR_DEBIAN_LIBOPUS
    return ONAIR_DEBIAN_LIBOPUS;
#else
    return "";
#endif
}
#endif
