/*
 * The two digests of STUN's long-term credentials (RFC 8489 §9.2.2 and §14.5), for the
 * TURN credential check: MD5 for the key, HMAC-SHA1 for MESSAGE-INTEGRITY.
 *
 * Why here: this target already links OpenSSL's libcrypto for the DTLS certificate (the
 * library GStreamer's dtls plugin links too). Taking the digests from it spares every
 * build a second copy of BoringSSL (swift-crypto's), several hundred C++ files compiled
 * for two functions that are called once per TURN server at start.
 */
#include "CDTLS.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

int pcdtls_hmac_sha1(const uint8_t *key, size_t key_length, const uint8_t *data,
                     size_t length, uint8_t out[20]) {
  unsigned int written = 0;
  if (HMAC(EVP_sha1(), key, (int) key_length, data, length, out, &written) == NULL)
    return -1;
  return written == 20 ? 0 : -1;
}

int pcdtls_md5(const uint8_t *data, size_t length, uint8_t out[16]) {
  unsigned int written = 0;
  if (EVP_Digest(data, length, out, &written, EVP_md5(), NULL) != 1)
    return -1;
  return written == 16 ? 0 : -1;
}
