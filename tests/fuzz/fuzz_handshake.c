/* libFuzzer target: the go-plugin handshake line a provider prints on its
 * stdout (proxy/handshake.c) and the certificate it may carry (cert.c). An
 * input is the line as read, e.g.
 *
 *   1|6|unix|/tmp/plugin123|grpc|MIIB...
 *
 * A line accepted must yield its fields as strings (the certificate empty,
 * or long enough to be one, and then either a PEM or a decode error); one
 * refused, a reason and nothing left to free. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy_int.h"

static const char pem_head[] = "-----BEGIN CERTIFICATE-----\n";

/* A field from the line: a string of it, without the separator. */
static void check_field(const char *s, size_t line_len)
{
    size_t n = strlen(s);
    if (n > line_len || memchr(s, '|', n) != NULL)
        abort();
}

static void check_cert(const char *b64)
{
    size_t n = strlen(b64);
    if (n == 0)
        return;
    if (n <= 50)
        abort(); /* go-plugin ignores these; so must the parser */
    char *pem = NULL;
    int rc = plugin_cert_b64der_to_pem(b64, n, &pem);
    if (rc == 0) {
        if (pem == NULL || strncmp(pem, pem_head, sizeof pem_head - 1) != 0)
            abort();
    } else if (pem != NULL || (rc != TFTAP_EDECODE && rc != TFTAP_ENOMEM)) {
        abort();
    }
    free(pem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    plugin_handshake hs;
    tftap_buf err = TFTAP_BUF_INIT;
    int rc = plugin_handshake_parse((const char *)data, size, &hs, &err);
    if (rc == 0) {
        if (!hs.network || !hs.address || !hs.protocol || !hs.cert_b64 || !hs.extra || err.len != 0)
            abort();
        if (hs.core_version != 1 || hs.proto_version < 0 || hs.address[0] == '\0' ||
            (strcmp(hs.network, "unix") != 0 && strcmp(hs.network, "tcp") != 0) ||
            strcmp(hs.protocol, "grpc") != 0)
            abort();
        check_field(hs.network, size);
        check_field(hs.address, size);
        check_field(hs.protocol, size);
        check_field(hs.cert_b64, size);
        if (strlen(hs.extra) > size)
            abort(); /* verbatim: may hold more separators */
        check_cert(hs.cert_b64);
    } else {
        if ((rc != TFTAP_EPROTO && rc != TFTAP_ENOMEM) ||
            (rc == TFTAP_EPROTO && (err.len == 0 || tftap_buf_cstr(&err)[0] == '\0')))
            abort();
        if (hs.network || hs.address || hs.protocol || hs.cert_b64 || hs.extra)
            abort(); /* a refused line leaves nothing to free */
    }
    plugin_handshake_done(&hs);
    tftap_buf_done(&err);
    return 0;
}
