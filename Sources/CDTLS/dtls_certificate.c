/*
 * The DTLS certificate webrtcbin presents, and putting it into webrtcbin.
 *
 * Why this exists: GStreamer 1.22's dtls plugin generates an RSA-2048 certificate
 * when given none, and peers that offer only ECDSA cipher suites (aiortc: ECDHE-ECDSA
 * with AES-GCM, ChaCha20 or AES-CBC) then fail the handshake with "no shared cipher".
 * Browsers and libwebrtc also default to ECDSA P-256, so that is what we present.
 *
 * Why C: OpenSSL's API is macros and variadics underneath (EVP_EC_gen expands to
 * the variadic EVP_PKEY_Q_keygen, BIO_get_mem_data to BIO_ctrl). OpenSSL is the
 * library GStreamer's dtls plugin itself links. Putting the certificate into
 * webrtcbin's DTLS elements is Swift (RTCSession/DTLSCertificate.swift).
 */
#include "CDTLS.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

/* Ten years: WebRTC peers check the fingerprint signalled in the SDP, never the
 * validity period, and the certificate lives as long as the process. */
#define PCG_DTLS_CERT_DAYS 3650

static char *openssl_failure(const char *step)
{
  unsigned long code = ERR_get_error();
  char reason[256] = "no OpenSSL error queued";
  char *text;
  size_t size;
  if (code != 0)
    ERR_error_string_n(code, reason, sizeof reason);
  ERR_clear_error();
  size = strlen(step) + strlen(reason) + sizeof " failed: ";
  text = malloc(size);
  if (text != NULL)
    snprintf(text, size, "%s failed: %s", step, reason);
  return text;
}

char *pcdtls_ecdsa_certificate_pem(const char *common_name, char **error)
{
  EVP_PKEY *key = NULL;
  X509 *cert = NULL;
  BIO *bio = NULL;
  char *pem = NULL;
  const char *step = NULL;
  unsigned char serial[8];
  BIGNUM *serial_bn = NULL;
  X509_NAME *name;
  char *data = NULL;
  long length;

  if (error)
    *error = NULL;

  step = "generating an EC P-256 key";
  key = EVP_EC_gen("P-256");
  if (key == NULL)
    goto fail;

  step = "building the X.509 certificate";
  cert = X509_new();
  if (cert == NULL || X509_set_version(cert, X509_VERSION_3) != 1)
    goto fail;
  /* A random positive serial, as RFC 5280 asks for unpredictable ones. */
  if (RAND_bytes(serial, sizeof serial) != 1)
    goto fail;
  serial[0] &= 0x7f;
  serial_bn = BN_bin2bn(serial, sizeof serial, NULL);
  if (serial_bn == NULL || BN_to_ASN1_INTEGER(serial_bn, X509_get_serialNumber(cert)) == NULL)
    goto fail;
  /* Valid from a day ago, so a peer whose clock is a little behind accepts it too. */
  if (X509_gmtime_adj(X509_getm_notBefore(cert), -24L * 3600) == NULL
      || X509_gmtime_adj(X509_getm_notAfter(cert), (long) PCG_DTLS_CERT_DAYS * 24 * 3600) == NULL)
    goto fail;
  name = X509_get_subject_name(cert);
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
          (const unsigned char *) (common_name ? common_name : "posecast"), -1, -1, 0) != 1
      || X509_set_issuer_name(cert, name) != 1
      || X509_set_pubkey(cert, key) != 1)
    goto fail;

  step = "signing the certificate";
  if (X509_sign(cert, key, EVP_sha256()) == 0)
    goto fail;

  step = "writing the certificate and key as PEM";
  bio = BIO_new(BIO_s_mem());
  if (bio == NULL || PEM_write_bio_X509(bio, cert) != 1
      || PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1)
    goto fail;
  length = BIO_get_mem_data(bio, &data);
  if (length <= 0 || data == NULL)
    goto fail;
  pem = malloc((size_t) length + 1);
  if (pem == NULL)
    goto fail;
  memcpy(pem, data, (size_t) length);
  pem[length] = '\0';
  goto done;

fail:
  if (error)
    *error = openssl_failure(step);
done:
  BIO_free(bio);
  BN_free(serial_bn);
  X509_free(cert);
  EVP_PKEY_free(key);
  return pem;
}

int pcdtls_init_without_exit_cleanup(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) == 1 ? 1 : 0;
}
