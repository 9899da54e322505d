/* libFuzzer target: what otlp/ reads from outside: a TRACEPARENT and an
 * OTEL_RESOURCE_ATTRIBUTES from the provider's environment, a receiver's
 * answer to an export, and a response's JSON read for its error
 * diagnostics (as a span's value, cut to a bound). None may crash; a
 * traceparent accepted must have given non-zero ids, resource pairs are
 * whole, and a cut never ends inside a UTF-8 character of valid input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    uint8_t t[16], p[8], f;
    if (otlp_traceparent_parse(s, t, p, &f) == 0) {
        static const uint8_t zero[16];
        if (memcmp(t, zero, 16) == 0 || memcmp(p, zero, 8) == 0)
            abort();
    }
    tftap_buf kv = TFTAP_BUF_INIT;
    int n = otlp_resource_parse(s, &kv);
    if (n >= 0) {
        /* n pairs of two NUL-terminated strings, nothing more. */
        int strings = 0;
        for (size_t i = 0; i < kv.len; i++)
            strings += kv.data[i] == '\0';
        if (strings != 2 * n || (kv.len > 0 && kv.data[kv.len - 1] != '\0'))
            abort();
    } else if (kv.len != 0) {
        abort();
    }
    tftap_buf_done(&kv);
    tftap_buf first = TFTAP_BUF_INIT;
    if (otlp_error_diagnostics((const char *)data, size, &first) < 0 || first.len > 1024)
        abort();
    tftap_buf_done(&first);
    size_t len = strlen(s), max = size % 64;
    size_t cut = otlp_value_cut(s, max);
    if (cut > max || cut > len || (len <= max && cut != len) ||
        (cut < len && max - cut > 3 && cut != max))
        abort();
    free(s);
    tftap_buf why = TFTAP_BUF_INIT;
    if (otlp_response_rejected(data, size, &why) < 0)
        abort();
    tftap_buf_done(&why);
    return 0;
}
