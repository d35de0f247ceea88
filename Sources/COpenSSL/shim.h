// OpenSSL's libcrypto: HMAC for STUN's MESSAGE-INTEGRITY now, DTLS-SRTP next (issue 31).
// Its static archive is linked through libcurl's .pc file (toolchain/deps.sh: libcurl is
// built with --with-openssl and lists -l:libssl.a -l:libcrypto.a), the headers are
// libssl-dev's.
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/opensslv.h>

/// HMAC-SHA1 of `data` under `key` into `out` (20 bytes); 1 on success.
static inline int onair_hmac_sha1(const void *key, int key_length, const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    return HMAC(EVP_sha1(), key, key_length, data, length, out, &written) != NULL && written == 20;
}
