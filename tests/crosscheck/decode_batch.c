/* decode_batch: the C half of the go-cty cross-check (tests/crosscheck.sh).
 *
 * Reads a stream of cases on stdin and writes one JSON line per case on
 * stdout, flushed per case so the Go side can tell which case was in flight
 * if this process dies. A case is
 *
 *   1 byte   'm' (msgpack payload) or 'j' (go-cty JSON payload)
 *   u32 BE   length of the cty type JSON, then those bytes
 *   u32 BE   length of the payload, then those bytes
 *
 * and its result line is {"ok":true,"json":"<decoded JSON as a string>"} or
 * {"ok":false,"code":N,"error":"<message>"}. The decoded JSON travels as a
 * string so that whatever the decoder produced, valid or not, reaches the
 * comparison intact; "utf8":false marks output that is not valid UTF-8.
 *
 * Exit status: 0 at a clean end of input, 2 on a malformed frame. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "decoder/decoder.h"

/* Generous, but keeps a corrupt frame from asking for absurd allocations. */
#define BATCH_MAX_FIELD ((uint32_t)512 << 20)

/* 1 when read fully, 0 at a clean EOF before the first byte, -1 otherwise. */
static int read_exact(void *p, size_t n)
{
    size_t got = fread(p, 1, n, stdin);
    if (got == n)
        return 1;
    return got == 0 && feof(stdin) ? 0 : -1;
}

static int read_field(tftap_buf *b)
{
    unsigned char len4[4];
    if (read_exact(len4, 4) != 1)
        return -1;
    uint32_t len = (uint32_t)len4[0] << 24 | (uint32_t)len4[1] << 16 | (uint32_t)len4[2] << 8 |
                   (uint32_t)len4[3];
    if (len > BATCH_MAX_FIELD)
        return -1;
    tftap_buf_reset(b);
    if (tftap_buf_reserve(b, len) != 0)
        return -1;
    if (len > 0 && read_exact(b->data, len) != 1)
        return -1;
    b->len = len;
    b->data[len] = '\0';
    return 0;
}

/* Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned min, cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, min = 0x80, cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, min = 0x800, cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, min = 0x10000, cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i <= k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

int main(void)
{
    tftap_buf type_json = TFTAP_BUF_INIT, payload = TFTAP_BUF_INIT;
    tftap_buf out = TFTAP_BUF_INIT, line = TFTAP_BUF_INIT;
    int status = 2;

    for (;;) {
        unsigned char kind;
        int r = read_exact(&kind, 1);
        if (r == 0) {
            status = 0;
            break;
        }
        if (r < 0 || (kind != 'm' && kind != 'j') || read_field(&type_json) != 0 ||
            read_field(&payload) != 0) {
            fprintf(stderr, "decode_batch: malformed frame\n");
            break;
        }

        dec_type *t = NULL;
        dec_error err = DEC_ERROR_INIT;
        tftap_buf_reset(&out);
        tftap_buf_reset(&line);
        int rc = dec_type_parse(type_json.data, type_json.len, NULL, &t, &err);
        if (rc == 0) {
            if (kind == 'm')
                rc = dec_msgpack_to_json(t, payload.data, payload.len, NULL, &out, &err);
            else
                rc = dec_json_to_json(t, payload.data, payload.len, NULL, &out, &err);
        }
        if (rc == 0) {
            tftap_buf_puts(&line, "{\"ok\":true,\"utf8\":");
            tftap_buf_puts(&line,
                           utf8_valid((const unsigned char *)out.data, out.len) ? "true" : "false");
            tftap_buf_puts(&line, ",\"json\":");
            tftap_buf_json_string(&line, out.data ? out.data : "", out.len);
            tftap_buf_puts(&line, "}\n");
        } else {
            tftap_buf msg = TFTAP_BUF_INIT;
            dec_error_format(&err, &msg);
            tftap_buf_printf(&line, "{\"ok\":false,\"code\":%d,\"error\":", rc);
            tftap_buf_json_string(&line, msg.data ? msg.data : "", msg.len);
            tftap_buf_puts(&line, "}\n");
            tftap_buf_done(&msg);
        }
        dec_error_done(&err);
        dec_type_free(t);
        if (tftap_buf_failed(&line)) {
            fprintf(stderr, "decode_batch: out of memory\n");
            break;
        }
        if (fwrite(line.data, 1, line.len, stdout) != line.len || fflush(stdout) != 0)
            break;
    }

    tftap_buf_done(&type_json);
    tftap_buf_done(&payload);
    tftap_buf_done(&out);
    tftap_buf_done(&line);
    return status;
}
