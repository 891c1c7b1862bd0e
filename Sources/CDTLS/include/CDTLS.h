#ifndef CDTLS_H
#define CDTLS_H
/*
 * CDTLS: the DTLS certificate every PoseCast peer presents, and the two digests of
 * the TURN credential check, from OpenSSL's libcrypto (headers from libssl-dev). Its
 * own target so that only RTCSession links libcrypto and the GStreamer shim stays
 * GStreamer-only. Prefix `pcdtls_`.
 *
 *  - Why C: OpenSSL's key generation and memory BIO are macros over variadic
 *    functions (EVP_EC_gen, BIO_get_mem_data), which Swift does not import; the
 *    digests sit beside them so that one C target holds every libcrypto call.
 */

#include <stddef.h>
#include <stdint.h>

/* A new self-signed ECDSA P-256 certificate and its private key, PEM, for the dtls
 * elements' "pem" property. Returns a string the caller owns and frees with free(),
 * or NULL with *error set to a message the caller frees with free(). */
char *pcdtls_ecdsa_certificate_pem(const char *common_name, char **error);

/* HMAC-SHA1 of `length` bytes of `data` under `key`, written to `out` (20 bytes; the
 * caller's). Returns 0, or -1 when libcrypto failed. */
int pcdtls_hmac_sha1(const uint8_t *key, size_t key_length, const uint8_t *data,
                     size_t length, uint8_t out[20]);

/* MD5 of `length` bytes of `data`, written to `out` (16 bytes; the caller's). Returns 0,
 * or -1 when libcrypto failed (a FIPS-only configuration refuses MD5). */
int pcdtls_md5(const uint8_t *data, size_t length, uint8_t out[16]);

/* Initialises libcrypto without its exit-time clean-up, before any other use in the
 * process. Why: `GStreamer.prepareDTLS` makes GStreamer's RSA key on a thread of its
 * own; a node that exits at once (a bad option) ran OpenSSL's atexit clean-up under that
 * thread's key generation, and it crashed (signal 11 in libcrypto, 4 exits in 6). The
 * operating system frees the memory anyway. Returns 1, or 0 when libcrypto refused. */
int pcdtls_init_without_exit_cleanup(void);

#endif
