// OpenSSL's libcrypto: HMAC for STUN's MESSAGE-INTEGRITY now, DTLS-SRTP next (issue 31).
// Its static archive is linked through libcurl's .pc file (toolchain/deps.sh: libcurl is
// built with --with-openssl and lists -l:libssl.a -l:libcrypto.a), the headers are
// libssl-dev's.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
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

/// A DTLS endpoint on memory BIOs (the caller moves datagrams): DTLS 1.2, the board's
/// certificate and key from PEM, the two SRTP profiles WebRTC uses (RFC 5764 §4.1.2;
/// AEAD GCM first, RFC 7714), a peer certificate required but accepted whatever it is:
/// it is checked against the SDP's fingerprint after the handshake (RFC 8827 §6.5).
static int onair_dtls_accept_any(int ok, X509_STORE_CTX *store) { (void)ok; (void)store; return 1; }

/// The server's cookie (RFC 6347 §4.2.1): 16 random bytes of its own per session, kept in
/// the SSL's app-data slot. A ClientHello is answered with a HelloVerifyRequest naming it,
/// and the handshake's flight (certificate and all, ~12 times a ClientHello's size) goes
/// only to a client that echoes it — one that receives at the address it sends from.
/// Each session already has its own state (its WHEP offer made it), so a random cookie per
/// session is as good as the stateless HMAC §4.2.1 suggests for servers without.
static inline int onair_dtls_cookie_generate(SSL *ssl, unsigned char *cookie, unsigned int *length) {
    const unsigned char *secret = (const unsigned char *)SSL_get_app_data(ssl);
    if (secret == NULL) return 0;
    memcpy(cookie, secret, 16);
    *length = 16;
    return 1;
}

static inline int onair_dtls_cookie_verify(SSL *ssl, const unsigned char *cookie, unsigned int length) {
    const unsigned char *secret = (const unsigned char *)SSL_get_app_data(ssl);
    return secret != NULL && length == 16 && CRYPTO_memcmp(cookie, secret, 16) == 0;
}

static inline SSL *onair_dtls_new(const char *pem, size_t length, int server) {
    SSL_CTX *ctx = SSL_CTX_new(DTLS_method());
    if (ctx == NULL) return NULL;
    SSL *ssl = NULL;
    BIO *source = BIO_new_mem_buf(pem, (int)length);
    X509 *cert = source ? PEM_read_bio_X509(source, NULL, NULL, NULL) : NULL;
    EVP_PKEY *key = cert ? PEM_read_bio_PrivateKey(source, NULL, NULL, NULL) : NULL;
    if (key == NULL || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1
        || SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION) != 1
        || SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") != 0) goto done;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, onair_dtls_accept_any);
    SSL_CTX_set_options(ctx, SSL_OP_NO_QUERY_MTU | (server ? SSL_OP_COOKIE_EXCHANGE : 0));
    SSL_CTX_set_cookie_generate_cb(ctx, onair_dtls_cookie_generate);
    SSL_CTX_set_cookie_verify_cb(ctx, onair_dtls_cookie_verify);
    ssl = SSL_new(ctx);
    if (ssl == NULL) goto done;
    unsigned char *cookie = OPENSSL_malloc(16);
    if (cookie == NULL || RAND_bytes(cookie, 16) != 1) { OPENSSL_free(cookie); SSL_free(ssl); ssl = NULL; goto done; }
    SSL_set_app_data(ssl, cookie);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    if (in == NULL || out == NULL) { BIO_free(in); BIO_free(out); SSL_free(ssl); ssl = NULL; goto done; }
    BIO_set_mem_eof_return(in, -1);  // an empty inbox means "wait", not end of stream
    SSL_set_bio(ssl, in, out);
    SSL_set_mtu(ssl, 1200);
    DTLS_set_link_mtu(ssl, 1200);
    if (server) SSL_set_accept_state(ssl); else SSL_set_connect_state(ssl);
done:
    EVP_PKEY_free(key);
    X509_free(cert);
    BIO_free(source);
    SSL_CTX_free(ctx);  // the SSL holds its own reference
    return ssl;
}

static inline void onair_dtls_free(SSL *ssl) {
    OPENSSL_free(SSL_get_app_data(ssl));
    SSL_free(ssl);
}

/// Feeds one datagram (may be empty) and advances the handshake: 1 when done, 0 while in
/// progress, -1 on failure.
static inline int onair_dtls_step(SSL *ssl, const unsigned char *datagram, size_t length) {
    if (length > 0 && BIO_write(SSL_get_rbio(ssl), datagram, (int)length) != (int)length) return -1;
    if (SSL_is_init_finished(ssl)) {
        // After the handshake DTLS-SRTP carries no data: whatever comes is read and
        // dropped, so nothing piles up in the memory BIO; a close_notify ends the session.
        unsigned char sink[2048];
        int n;
        while ((n = SSL_read(ssl, sink, sizeof sink)) > 0) {}
        ERR_clear_error();
        return SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN ? 2 : 1;
    }
    int result = SSL_do_handshake(ssl);
    if (result == 1) return 1;
    int error = SSL_get_error(ssl, result);
    return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/// A close_notify alert into the outbox (RFC 6347 §4.2.7 via TLS's closure alerts): the
/// peer learns at once that the session is over.
static inline void onair_dtls_shutdown(SSL *ssl) {
    if (SSL_is_init_finished(ssl)) SSL_shutdown(ssl);
    ERR_clear_error();
}

/// What the endpoint has to send: up to `capacity` bytes of its outbox (0 when empty).
static inline int onair_dtls_outgoing(SSL *ssl, unsigned char *buffer, size_t capacity) {
    int pending = (int)BIO_ctrl_pending(SSL_get_wbio(ssl));
    if (pending <= 0) return 0;
    return BIO_read(SSL_get_wbio(ssl), buffer, (int)(capacity < (size_t)pending ? capacity : (size_t)pending));
}

/// The negotiated SRTP profile's id (RFC 5764 §4.1.2: 0x0001, 0x0007), 0 for none.
static inline int onair_dtls_srtp_profile(SSL *ssl) {
    SRTP_PROTECTION_PROFILE *profile = SSL_get_selected_srtp_profile(ssl);
    return profile ? (int)profile->id : 0;
}

/// RFC 5764 §4.2: the keying material, "EXTRACTOR-dtls_srtp", `length` bytes.
static inline int onair_dtls_export(SSL *ssl, unsigned char *out, size_t length) {
    static const char label[] = "EXTRACTOR-dtls_srtp";
    return SSL_export_keying_material(ssl, out, length, label, sizeof label - 1, NULL, 0, 0);
}

/// The peer certificate's SHA-256 fingerprint (32 bytes): 1, or 0 without one.
static inline int onair_dtls_peer_fingerprint(SSL *ssl, unsigned char *out) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    unsigned int size = 0;
    int ok = peer != NULL && X509_digest(peer, EVP_sha256(), out, &size) == 1 && size == 32;
    X509_free(peer);
    return ok;
}

/// DTLS retransmission (RFC 6347 §4.2.4): 1 if a flight was queued again.
static inline int onair_dtls_timeout(SSL *ssl) { return DTLSv1_handle_timeout(ssl) > 0; }

// MARK: TLS clients (rtmps:// destinations)

/// A TLS client on a connected non-blocking socket, as a platform's RTMPS ingest expects
/// it: TLS 1.2 or later, the system's trusted certificates (OpenSSL's default paths,
/// /etc/ssl/certs; SSL_CERT_FILE and SSL_CERT_DIR replace them, as for every OpenSSL
/// program), and the certificate checked against the host: its DNS name with SNI (RFC
/// 6066 §3), or an IP address (no SNI for a literal). NULL on failure.
static inline SSL *onair_tls_client_new(int fd, const char *host, int host_is_ip) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) return NULL;
    SSL *ssl = NULL;
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 || SSL_CTX_set_default_verify_paths(ctx) != 1) goto done;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    // A write the socket takes in part returns what went; the rest is passed again from
    // wherever the caller's buffer is then.
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    ssl = SSL_new(ctx);
    if (ssl == NULL) goto done;
    int named = host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
                           : (SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1);
    if (SSL_set_fd(ssl, fd) != 1 || named != 1) { SSL_free(ssl); ssl = NULL; goto done; }
    SSL_set_connect_state(ssl);
done:
    SSL_CTX_free(ctx);  // the SSL holds its own reference
    ERR_clear_error();
    return ssl;
}

/// What a TLS call says: bytes (> 0), the peer closed (0), or one of these.
enum { ONAIR_TLS_WANT_READ = -1, ONAIR_TLS_WANT_WRITE = -2, ONAIR_TLS_FAILED = -3 };

static inline int onair_tls_result(SSL *ssl, int result) {
    if (result > 0) return result;
    switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ: return ONAIR_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return ONAIR_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SSL:
        // A peer that closes without TLS's close_notify has closed all the same (OpenSSL 3
        // calls it an error); what a user needs to hear is that the server closed it.
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) { ERR_clear_error(); return 0; }
        return ONAIR_TLS_FAILED;
    default: return ONAIR_TLS_FAILED;
    }
}

/// The handshake, advanced as far as the socket lets it: 1 when done, else a want or
/// ONAIR_TLS_FAILED.
static inline int onair_tls_handshake(SSL *ssl) {
    int result = SSL_do_handshake(ssl);
    return result == 1 ? 1 : onair_tls_result(ssl, result);
}

static inline int onair_tls_read(SSL *ssl, void *buffer, int capacity) { return onair_tls_result(ssl, SSL_read(ssl, buffer, capacity)); }
static inline int onair_tls_write(SSL *ssl, const void *buffer, int length) { return onair_tls_result(ssl, SSL_write(ssl, buffer, length)); }

/// Why the last call failed, in words, into `text` (`capacity` bytes, NUL-terminated):
/// the certificate check's reason when that is what failed, else OpenSSL's first error.
static inline void onair_tls_failure(SSL *ssl, char *text, size_t capacity) {
    long verified = SSL_get_verify_result(ssl);
    unsigned long error = ERR_peek_error();
    if (verified != X509_V_OK) {
        snprintf(text, capacity, "certificate not trusted: %s", X509_verify_cert_error_string(verified));
    } else if (error != 0) {
        ERR_error_string_n(error, text, capacity);
    } else {
        snprintf(text, capacity, "the connection failed during TLS");
    }
    ERR_clear_error();
}

/// A close_notify, as far as the socket takes it now, and the end of the SSL.
static inline void onair_tls_close(SSL *ssl) {
    if (SSL_is_init_finished(ssl)) SSL_shutdown(ssl);
    ERR_clear_error();
    SSL_free(ssl);
}
