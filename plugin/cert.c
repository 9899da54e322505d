/* plugin: throw-away certificates shaped like go-plugin's own, so that both
 * go-plugin clients and servers accept them as a pinned, self-signed CA. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "plugin/plugin.h"

/* go-plugin's certificates live 262980 hours (about 30 years). */
#define CERT_DAYS 10957

static char *bio_take(BIO *bio)
{
    char *data = NULL;
    long n = BIO_get_mem_data(bio, &data);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    return s;
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL)
        return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static char *b64_unpadded(const unsigned char *der, int len)
{
    size_t cap = 4 * (((size_t)len + 2) / 3) + 1;
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    int n = EVP_EncodeBlock((unsigned char *)out, der, len);
    while (n > 0 && out[n - 1] == '=')
        n--;
    out[n] = '\0';
    return out;
}

int plugin_cert_make(plugin_cert *cert)
{
    int rc = TFTAP_ETLS;
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    BIGNUM *serial = NULL;
    BIO *bio = NULL;
    unsigned char *der = NULL;

    memset(cert, 0, sizeof *cert);
    key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    x = X509_new();
    serial = BN_new();
    if (key == NULL || x == NULL || serial == NULL)
        goto cleanup;

    /* A random 128-bit serial, like go-plugin, so two runs never collide. */
    if (!BN_rand(serial, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
        BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) == NULL)
        goto cleanup;
    if (!X509_set_version(x, 2) || X509_gmtime_adj(X509_getm_notBefore(x), -30) == NULL ||
        X509_time_adj_ex(X509_getm_notAfter(x), CERT_DAYS, 0, NULL) == NULL ||
        !X509_set_pubkey(x, key))
        goto cleanup;

    X509_NAME *name = X509_get_subject_name(x);
    if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"tftap", -1, -1,
                                    0) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost",
                                    -1, -1, 0) ||
        !X509_set_issuer_name(x, name))
        goto cleanup;

    /* Self-signed and used as its own trust anchor by the peer: it must be a
     * CA that may sign certificates, and serve both as server and client. */
    if (add_ext(x, NID_basic_constraints, "critical,CA:TRUE") != 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature,keyAgreement,keyCertSign") != 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth,clientAuth") != 0 ||
        add_ext(x, NID_subject_alt_name, "DNS:localhost") != 0 ||
        add_ext(x, NID_subject_key_identifier, "hash") != 0)
        goto cleanup;
    if (X509_sign(x, key, EVP_sha256()) == 0)
        goto cleanup;

    rc = TFTAP_ENOMEM;
    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || !PEM_write_bio_X509(bio, x) || (cert->cert_pem = bio_take(bio)) == NULL)
        goto cleanup;
    BIO_free(bio);
    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || !PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) ||
        (cert->key_pem = bio_take(bio)) == NULL)
        goto cleanup;
    int der_len = i2d_X509(x, &der);
    if (der_len <= 0 || (cert->der_b64 = b64_unpadded(der, der_len)) == NULL)
        goto cleanup;
    cert->x509 = x;
    cert->key = key;
    x = NULL;
    key = NULL;
    rc = 0;

cleanup:
    OPENSSL_free(der);
    BIO_free(bio);
    BN_free(serial);
    X509_free(x);
    EVP_PKEY_free(key);
    if (rc != 0)
        plugin_cert_done(cert);
    return rc;
}

void plugin_cert_done(plugin_cert *cert)
{
    if (cert == NULL)
        return;
    if (cert->key_pem != NULL)
        OPENSSL_cleanse(cert->key_pem, strlen(cert->key_pem));
    free(cert->cert_pem);
    free(cert->key_pem);
    free(cert->der_b64);
    X509_free(cert->x509);
    EVP_PKEY_free(cert->key);
    memset(cert, 0, sizeof *cert);
}

int plugin_cert_b64der_to_pem(const char *b64, size_t len, char **pem)
{
    int rc = TFTAP_EDECODE;
    char *padded = NULL;
    unsigned char *der = NULL;
    X509 *x = NULL;
    BIO *bio = NULL;

    *pem = NULL;
    if (len == 0 || len > PLUGIN_HANDSHAKE_MAX)
        return TFTAP_EDECODE;
    /* EVP_DecodeBlock wants whole quanta: put back the padding go-plugin
     * strips (RawStdEncoding). */
    size_t plen = (len + 3) / 4 * 4;
    padded = malloc(plen + 1);
    der = malloc(plen / 4 * 3 + 1);
    if (padded == NULL || der == NULL) {
        rc = TFTAP_ENOMEM;
        goto cleanup;
    }
    memcpy(padded, b64, len);
    memset(padded + len, '=', plen - len);
    padded[plen] = '\0';
    int n = EVP_DecodeBlock(der, (unsigned char *)padded, (int)plen);
    if (n <= 0)
        goto cleanup;
    /* DER carries its own length, so the padding's zero bytes are ignored;
     * anything that is not one whole certificate is refused. */
    const unsigned char *p = der;
    x = d2i_X509(NULL, &p, n);
    if (x == NULL || (size_t)(n - (p - der)) > 2)
        goto cleanup;
    rc = TFTAP_ENOMEM;
    bio = BIO_new(BIO_s_mem());
    if (bio == NULL || !PEM_write_bio_X509(bio, x) || (*pem = bio_take(bio)) == NULL)
        goto cleanup;
    rc = 0;

cleanup:
    BIO_free(bio);
    X509_free(x);
    free(der);
    free(padded);
    return rc;
}
