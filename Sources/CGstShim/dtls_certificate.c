/*
 * The DTLS certificate webrtcbin presents, and putting it into webrtcbin.
 *
 * Why this exists: GStreamer 1.22's dtls plugin generates an RSA-2048 certificate
 * when given none, and peers that offer only ECDSA cipher suites (aiortc: ECDHE-ECDSA
 * with AES-GCM, ChaCha20 or AES-CBC) then fail the handshake with "no shared cipher".
 * Browsers and libwebrtc also default to ECDSA P-256, so that is what we present.
 *
 * Why C: OpenSSL's API is macros and variadics underneath (EVP_EC_gen expands to
 * the variadic EVP_PKEY_Q_keygen, BIO_get_mem_data to BIO_ctrl), and finding the
 * dtlssrtpdec elements inside webrtcbin means walking a GstIterator of GValues.
 * OpenSSL is the library GStreamer's dtls plugin itself links.
 */
#include "CGstShim.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

/* Ten years: WebRTC peers check the fingerprint signalled in the SDP, never the
 * validity period, and the certificate lives as long as the process. */
#define PCG_DTLS_CERT_DAYS 3650

static gchar *openssl_failure(const gchar *step)
{
  unsigned long code = ERR_get_error();
  char reason[256] = "no OpenSSL error queued";
  if (code != 0)
    ERR_error_string_n(code, reason, sizeof reason);
  ERR_clear_error();
  return g_strdup_printf("%s failed: %s", step, reason);
}

gchar *pcg_dtls_ecdsa_certificate_pem(const gchar *common_name, gchar **error)
{
  EVP_PKEY *key = NULL;
  X509 *cert = NULL;
  BIO *bio = NULL;
  gchar *pem = NULL;
  const gchar *step = NULL;
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
  pem = g_strndup(data, (gsize) length);
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

static gboolean made_by(GstElement *element, const gchar *factory)
{
  GstElementFactory *f = gst_element_get_factory(element);
  return f != NULL && g_strcmp0(GST_OBJECT_NAME(f), factory) == 0;
}

guint pcg_set_string_on_factory_elements(GstElement *element, const gchar *factory,
                                         const gchar *property, const gchar *value)
{
  guint count = 0;
  GstIterator *it;
  GValue item = G_VALUE_INIT;
  gboolean done = FALSE;

  if (element == NULL)
    return 0;
  if (made_by(element, factory)) {
    g_object_set(element, property, value, NULL);
    count++;
  }
  if (!GST_IS_BIN(element))
    return count;
  it = gst_bin_iterate_recurse(GST_BIN(element));
  while (!done) {
    switch (gst_iterator_next(it, &item)) {
      case GST_ITERATOR_OK: {
        GstElement *child = GST_ELEMENT(g_value_get_object(&item));
        if (made_by(child, factory)) {
          g_object_set(child, property, value, NULL);
          count++;
        }
        g_value_reset(&item);
        break;
      }
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync(it);
        count = made_by(element, factory) ? 1 : 0;
        break;
      case GST_ITERATOR_ERROR:
      case GST_ITERATOR_DONE:
        done = TRUE;
        break;
    }
  }
  g_value_unset(&item);
  gst_iterator_free(it);
  return count;
}
