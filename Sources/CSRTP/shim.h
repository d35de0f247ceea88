/* libsrtp2 (built on OpenSSL's ciphers by toolchain/deps.sh): SRTP and SRTCP for WebRTC. */
#ifndef ONAIR_CSRTP_SHIM_H
#define ONAIR_CSRTP_SHIM_H
#include <string.h>
#include <srtp2/srtp.h>
#if __has_include(<onair-deps.h>)
#include <onair-deps.h>
#endif

/* The profiles DTLS-SRTP agrees on (RFC 5764 §4.1.2, RFC 7714 §14.2), by their numbers. */
enum { ONAIR_SRTP_AES128_CM_SHA1_80 = 1, ONAIR_SRTP_AEAD_AES_128_GCM = 7 };

/* libsrtp's ciphers, once per process (the caller makes it once: a Swift global). */
static inline int onair_srtp_init(void) { return srtp_init() == srtp_err_status_ok; }

/* One direction's session: every SSRC sent (outbound) or received (inbound) under one
 * master key and salt, concatenated in `key`. An outbound session may protect a sequence
 * number again (a retransmission answering a NACK, RFC 4585 §6.2.1); an inbound one keeps
 * libsrtp's replay window. NULL when the profile or key is not accepted. */
static inline srtp_t onair_srtp_new(int profile, const unsigned char *key, size_t length, int inbound) {
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    size_t expected;
    if (profile == ONAIR_SRTP_AEAD_AES_128_GCM) {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
        expected = 16 + 12;
    } else if (profile == ONAIR_SRTP_AES128_CM_SHA1_80) {
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtcp);
        expected = 16 + 14;
    } else {
        return NULL;
    }
    if (length != expected) return NULL;
    unsigned char copy[32];
    memcpy(copy, key, length);
    policy.ssrc.type = inbound ? ssrc_any_inbound : ssrc_any_outbound;
    policy.key = copy;
    policy.window_size = 1024;
    policy.allow_repeat_tx = inbound ? 0 : 1;
    srtp_t session = NULL;
    srtp_err_status_t status = srtp_create(&session, &policy);
    memset(copy, 0, sizeof copy);
    return status == srtp_err_status_ok ? session : NULL;
}

/* The most a protected packet grows by: the tag, and SRTCP's index. */
static inline int onair_srtp_max_trailer(void) { return SRTP_MAX_TRAILER_LEN; }

static inline const char *onair_debian_libsrtp2(void) {
#ifdef ONAIR_DEBIAN_LIBSRTP2
    return ONAIR_DEBIAN_LIBSRTP2;
#else
    return "";
#endif
}
#endif
