// OpenSSL's libcrypto: HMAC for STUN's MESSAGE-INTEGRITY now, DTLS-SRTP next (issue 31).
// Its static archive is linked through libcurl's .pc file (toolchain/deps.sh: libcurl is
// built with --with-openssl and lists -l:libssl.a -l:libcrypto.a), the headers are
// libssl-dev's.
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

/// HMAC-SHA1 of `data` under `key` into `out` (20 bytes); 1 on success.
static inline int onair_hmac_sha1(const void *key, int key_length, const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    return HMAC(EVP_sha1(), key, key_length, data, length, out, &written) != NULL && written == 20;
}

/// Frees what a function here returned.
static inline void onair_free(void *pointer) { free(pointer); }

/// The PEM text a memory BIO holds, as a new NUL-terminated string the caller frees.
static inline char *onair_bio_text(BIO *bio) {
    char *data = NULL;
    long length = BIO_get_mem_data(bio, &data);
    if (length <= 0) return NULL;
    char *copy = malloc((size_t)length + 1);
    if (copy == NULL) return NULL;
    memcpy(copy, data, (size_t)length);
    copy[length] = 0;
    return copy;
}

/// A self-signed ECDSA P-256 certificate for DTLS-SRTP (RFC 8827 §6.5: browsers check it
/// by the fingerprint in the SDP, not by a chain): its PEM, then its private key's PEM, as
/// one string the caller frees; NULL on failure. Valid from a day before now for ten
/// years (a board's clock may be wrong; browsers do not check the dates of these).
static inline char *onair_dtls_certificate_pem(const char *common_name) {
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *cert = X509_new();
    BIO *bio = BIO_new(BIO_s_mem());
    char *text = NULL;
    unsigned char serial[8];
    if (key == NULL || cert == NULL || bio == NULL || RAND_bytes(serial, sizeof serial) != 1) goto done;
    serial[0] &= 0x7F;  // a positive INTEGER
    BIGNUM *number = BN_bin2bn(serial, sizeof serial, NULL);
    if (number == NULL) goto done;
    BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert));
    BN_free(number);
    X509_NAME *name = X509_get_subject_name(cert);
    if (X509_set_version(cert, 2) != 1 || X509_gmtime_adj(X509_getm_notBefore(cert), -86400) == NULL
        || X509_gmtime_adj(X509_getm_notAfter(cert), 3650L * 86400) == NULL || X509_set_pubkey(cert, key) != 1
        || X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)common_name, -1, -1, 0) != 1
        || X509_set_issuer_name(cert, name) != 1 || X509_sign(cert, key, EVP_sha256()) == 0) goto done;
    if (PEM_write_bio_X509(bio, cert) != 1 || PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1) goto done;
    text = onair_bio_text(bio);
done:
    BIO_free(bio);
    X509_free(cert);
    EVP_PKEY_free(key);
    return text;
}

/// Checks PEM text holding a certificate and the private key that goes with it, and
/// writes the certificate's SHA-256 fingerprint (32 bytes) to `fingerprint`: 1 if both
/// parse and match, 0 otherwise.
static inline int onair_dtls_certificate_check(const char *pem, size_t length, unsigned char *fingerprint) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return 0;
    X509 *cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    EVP_PKEY *key = cert ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    unsigned int size = 0;
    int ok = cert != NULL && key != NULL && X509_check_private_key(cert, key) == 1
        && X509_digest(cert, EVP_sha256(), fingerprint, &size) == 1 && size == 32;
    EVP_PKEY_free(key);
    X509_free(cert);
    BIO_free(bio);
    return ok;
}
