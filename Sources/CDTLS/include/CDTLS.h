#ifndef CDTLS_H
#define CDTLS_H
/*
 * CDTLS: the DTLS certificate every PoseCast peer presents, made with OpenSSL's
 * libcrypto (headers from libssl-dev). Its own target so that only RTCSession links
 * libcrypto and the GStreamer shim stays GStreamer-only. Prefix `pcdtls_`.
 *
 *  - Why C: OpenSSL's key generation and memory BIO are macros over variadic
 *    functions (EVP_EC_gen, BIO_get_mem_data), which Swift does not import.
 */

/* A new self-signed ECDSA P-256 certificate and its private key, PEM, for the dtls
 * elements' "pem" property. Returns a string the caller owns and frees with free(),
 * or NULL with *error set to a message the caller frees with free(). */
char *pcdtls_ecdsa_certificate_pem(const char *common_name, char **error);

#endif
