/* libFuzzer target: what otlp/ reads from outside: a TRACEPARENT from the
 * provider's environment and a receiver's answer to an export. Neither may
 * crash; a traceparent accepted must have given non-zero ids. */
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
    free(s);
    tftap_buf why = TFTAP_BUF_INIT;
    if (otlp_response_rejected(data, size, &why) < 0)
        abort();
    tftap_buf_done(&why);
    return 0;
}
