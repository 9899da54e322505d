/* common: the project's error codes, a growable byte buffer and digests.
 *
 * The lowest layer: every module may include this header; it includes no
 * other project header. Buffers own their bytes; tftap_buf_done() frees them. */
#ifndef TFTAP_COMMON_H
#define TFTAP_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Every fallible function returns 0 or one of these (negative). */
enum tftap_err {
    TFTAP_OK = 0,
    TFTAP_ENOMEM = -1,    /* out of memory */
    TFTAP_EINVAL = -2,    /* bad argument or usage */
    TFTAP_EDECODE = -3,   /* malformed input bytes */
    TFTAP_ELIMIT = -4,    /* a size or depth limit was exceeded */
    TFTAP_EIO = -5,       /* operating-system I/O error (errno kept by caller) */
    TFTAP_ENOTFOUND = -6, /* no such item */
    TFTAP_ESTORE = -7,    /* database error */
    TFTAP_EPROTO = -8,    /* plugin protocol violation */
    TFTAP_ETLS = -9,      /* certificate or TLS setup failure */
    TFTAP_ECHILD = -10,   /* child process failure */
};

/* A static, lowercase description of an error code. */
const char *tftap_strerror(int err);

/* A growable byte buffer, always NUL-terminated when len > 0 or after
 * tftap_buf_cstr(). Zero-initialise (TFTAP_BUF_INIT) before use. Once an
 * allocation fails the buffer stays failed: later appends are no-ops and
 * tftap_buf_failed() reports it, so callers can check once at the end. */
typedef struct tftap_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} tftap_buf;

#define TFTAP_BUF_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

void tftap_buf_done(tftap_buf *b);
void tftap_buf_reset(tftap_buf *b);                /* len = 0, keeps memory */
int tftap_buf_reserve(tftap_buf *b, size_t extra); /* 0 or TFTAP_ENOMEM */
void tftap_buf_append(tftap_buf *b, const void *p, size_t n);
void tftap_buf_puts(tftap_buf *b, const char *s);
void tftap_buf_putc_slow(tftap_buf *b, char c);
/* Inline: the decoder writes JSON punctuation a byte at a time. */
static inline void tftap_buf_putc(tftap_buf *b, char c)
{
    if (b->len + 1 < b->cap && !b->failed) {
        b->data[b->len++] = c;
        b->data[b->len] = '\0';
        return;
    }
    tftap_buf_putc_slow(b, c);
}
void tftap_buf_printf(tftap_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s (n bytes, valid UTF-8 assumed) as a quoted JSON string. */
void tftap_buf_json_string(tftap_buf *b, const char *s, size_t n);
const char *tftap_buf_cstr(tftap_buf *b); /* "" when empty */
static inline int tftap_buf_failed(const tftap_buf *b)
{
    return b->failed;
}
/* Hand the bytes to the caller (who frees them with free()); b is reset. */
char *tftap_buf_take(tftap_buf *b, size_t *len);

/* Append json (valid JSON text, as the decoder writes it) indented by two
 * spaces per level; numbers and strings are copied verbatim. */
void tftap_json_pretty(const char *json, size_t len, tftap_buf *out);

/* Bytewise order of two byte strings, the shorter first on a common prefix
 * (what memcmp gives equal-length ones). Either may be NULL when empty. */
int tftap_bytes_cmp(const void *a, size_t an, const void *b, size_t bn);

/* Digests (OpenSSL). out receives 64 lowercase hex digits and a NUL. */
void tftap_sha256_hex(const void *data, size_t len, char out[65]);
void tftap_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                           char out[65]);

/* Read a whole file ("-" = stdin) into *buf, at most max bytes.
 * Returns 0, TFTAP_EIO (errno set) or TFTAP_ELIMIT or TFTAP_ENOMEM. */
int tftap_read_file(const char *path, size_t max, tftap_buf *buf);

#endif
