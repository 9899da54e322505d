/* common: error strings, byte buffers, digests, clocks, hex, file reading. */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

const char *tftap_strerror(int err)
{
    switch (err) {
    case TFTAP_OK:
        return "success";
    case TFTAP_ENOMEM:
        return "out of memory";
    case TFTAP_EINVAL:
        return "invalid argument";
    case TFTAP_EDECODE:
        return "malformed input";
    case TFTAP_ELIMIT:
        return "limit exceeded";
    case TFTAP_EIO:
        return "i/o error";
    case TFTAP_ENOTFOUND:
        return "not found";
    case TFTAP_ESTORE:
        return "database error";
    case TFTAP_EPROTO:
        return "plugin protocol error";
    case TFTAP_ETLS:
        return "tls error";
    case TFTAP_ECHILD:
        return "child process error";
    case TFTAP_ENOLIB:
        return "a shared library could not be loaded";
    }
    return "unknown error";
}

void tftap_buf_done(tftap_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

void tftap_buf_reset(tftap_buf *b)
{
    b->len = 0;
    b->failed = 0;
    if (b->data)
        b->data[0] = '\0';
}

int tftap_buf_grow(tftap_buf *b, size_t extra)
{
    if (b->failed)
        return TFTAP_ENOMEM;
    if (extra >= SIZE_MAX - b->len) {
        b->failed = 1;
        return TFTAP_ENOMEM;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return TFTAP_ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void tftap_buf_append(tftap_buf *b, const void *p, size_t n)
{
    if (tftap_buf_reserve(b, n))
        return;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tftap_buf_puts(tftap_buf *b, const char *s)
{
    tftap_buf_append(b, s, strlen(s));
}

void tftap_buf_putc_slow(tftap_buf *b, char c)
{
    tftap_buf_append(b, &c, 1);
}

void tftap_buf_printf(tftap_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || tftap_buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

size_t tftap_json_plain_len(const char *s, size_t n, int del)
{
    /* Eight bytes at a time while none is < 0x20, '"', '\\' (or 0x7f):
     * the classic "has a zero byte" test on x, x ^ '"', ... */
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    const uint64_t del_byte = del ? 0x7f : '"';
    size_t j = 0;
    while (j + 8 <= n) {
        uint64_t x;
        memcpy(&x, s + j, 8);
        uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\'), d = x ^ (ones * del_byte);
        uint64_t hit =
            ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((bs - ones) & ~bs) | ((d - ones) & ~d);
        if (hit & highs)
            break;
        j += 8;
    }
    while (j < n) {
        unsigned char c = (unsigned char)s[j];
        if (c < 0x20 || c == '"' || c == '\\' || (del && c == 0x7f))
            break;
        j++;
    }
    return j;
}

void tftap_buf_json_string(tftap_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    /* Worst case every byte becomes \u00XX. */
    if (n > (SIZE_MAX - 3) / 6 || tftap_buf_reserve(b, n * 6 + 2))
        return;
    char *o = b->data + b->len;
    *o++ = '"';
    /* Runs of bytes that need no escape (nearly all of them) are copied
     * whole: this is the decoder's busiest loop. */
    for (size_t i = 0; i < n;) {
        size_t j = i + tftap_json_plain_len(s + i, n - i, 1);
        memcpy(o, s + i, j - i);
        o += j - i;
        if (j == n)
            break;
        unsigned char c = (unsigned char)s[j];
        *o++ = '\\';
        switch (c) {
        case '"':
        case '\\':
            *o++ = (char)c;
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
        i = j + 1;
    }
    *o++ = '"';
    *o = '\0';
    b->len = (size_t)(o - b->data);
}

const char *tftap_buf_cstr(tftap_buf *b)
{
    return b->data && !b->failed ? b->data : "";
}

char *tftap_buf_take(tftap_buf *b, size_t *len)
{
    char *p = b->data;
    if (len)
        *len = b->len;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
    return p;
}

void tftap_hex_encode(const void *data, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *md = data;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * n] = '\0';
}

int tftap_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int64_t tftap_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t tftap_mono_ms(void)
{
    return mono_us() / 1000;
}

int tftap_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int tftap_wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - tftap_mono_ms();
        if (left <= 0)
            return TFTAP_ELIMIT;
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        return n > 0 ? 0 : n == 0 ? TFTAP_ELIMIT : TFTAP_EIO;
    }
}

void tftap_deadline_in(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void tftap_deadline_at(struct timespec *ts, int64_t until_ms)
{
    ts->tv_sec = (time_t)(until_ms / 1000);
    ts->tv_nsec = (long)(until_ms % 1000) * 1000000L;
}

/* SHA-256 fetched from OpenSSL's provider once: SHA256() and HMAC() fetch
 * it for every call, which costs more than hashing a short value. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha256(void)
{
    pthread_once(&sha256_once, sha256_fetch);
    return sha256_md ? sha256_md : EVP_sha256();
}

void tftap_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    if (EVP_Digest(data, len, md, NULL, sha256(), NULL) != 1)
        SHA256(data, len, md);
    tftap_hex_encode(md, sizeof md, out);
}

struct tftap_hmac {
    EVP_MD_CTX *inner, *outer; /* after the key's ipad / opad block */
    EVP_MD_CTX *work;
};

void tftap_hmac_free(tftap_hmac *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->inner);
    EVP_MD_CTX_free(h->outer);
    EVP_MD_CTX_free(h->work);
    free(h);
}

/* RFC 2104: H((K ^ opad) || H((K ^ ipad) || m)), K hashed first when longer
 * than a block and padded with zeros to one. */
tftap_hmac *tftap_hmac_new(const void *key, size_t key_len)
{
    tftap_hmac *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    unsigned char k[64] = {0}, pad[64];
    if (key_len > sizeof k) {
        if (EVP_Digest(key, key_len, k, NULL, sha256(), NULL) != 1)
            goto fail;
    } else if (key_len) {
        memcpy(k, key, key_len);
    }
    h->inner = EVP_MD_CTX_new();
    h->outer = EVP_MD_CTX_new();
    h->work = EVP_MD_CTX_new();
    if (!h->inner || !h->outer || !h->work)
        goto fail;
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = k[i] ^ 0x36;
    if (EVP_DigestInit_ex(h->inner, sha256(), NULL) != 1 ||
        EVP_DigestUpdate(h->inner, pad, sizeof pad) != 1)
        goto fail;
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = k[i] ^ 0x5c;
    if (EVP_DigestInit_ex(h->outer, sha256(), NULL) != 1 ||
        EVP_DigestUpdate(h->outer, pad, sizeof pad) != 1)
        goto fail;
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(pad, sizeof pad);
    return h;
fail:
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(pad, sizeof pad);
    tftap_hmac_free(h);
    return NULL;
}

int tftap_hmac_hex(tftap_hmac *h, const void *data, size_t len, char out[65])
{
    unsigned char ih[SHA256_DIGEST_LENGTH], md[SHA256_DIGEST_LENGTH];
    if (EVP_MD_CTX_copy_ex(h->work, h->inner) != 1 || EVP_DigestUpdate(h->work, data, len) != 1 ||
        EVP_DigestFinal_ex(h->work, ih, NULL) != 1 || EVP_MD_CTX_copy_ex(h->work, h->outer) != 1 ||
        EVP_DigestUpdate(h->work, ih, sizeof ih) != 1 ||
        EVP_DigestFinal_ex(h->work, md, NULL) != 1) {
        out[0] = '\0';
        return -1;
    }
    tftap_hex_encode(md, sizeof md, out);
    return 0;
}

void tftap_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                           char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    HMAC(EVP_sha256(), key, (int)key_len, data, len, md, &mdlen);
    tftap_hex_encode(md, mdlen, out);
}

int tftap_read_file(const char *path, size_t max, tftap_buf *buf)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return TFTAP_EIO;
    int rc = 0;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (buf->len + n > max) {
            rc = TFTAP_ELIMIT;
            break;
        }
        tftap_buf_append(buf, chunk, n);
        if (tftap_buf_failed(buf)) {
            rc = TFTAP_ENOMEM;
            break;
        }
    }
    if (!rc && ferror(f)) {
        rc = TFTAP_EIO;
    }
    if (f != stdin)
        fclose(f);
    return rc;
}

static void newline(tftap_buf *out, int level)
{
    tftap_buf_putc(out, '\n');
    for (int i = 0; i < level; i++)
        tftap_buf_append(out, "  ", 2);
}

void tftap_json_pretty(const char *json, size_t len, tftap_buf *out)
{
    int level = 0;
    for (size_t i = 0; i < len; i++) {
        char c = json[i];
        switch (c) {
        case '"': {
            size_t start = i++;
            while (i < len && json[i] != '"')
                i += json[i] == '\\' ? 2 : 1;
            tftap_buf_append(out, json + start, (i < len ? i + 1 : len) - start);
            break;
        }
        case '{':
        case '[': {
            char close = c == '{' ? '}' : ']';
            size_t k = i + 1;
            while (k < len && (json[k] == ' ' || json[k] == '\n'))
                k++;
            if (k < len && json[k] == close) { /* empty: keep it on one line */
                tftap_buf_putc(out, c);
                tftap_buf_putc(out, close);
                i = k;
                break;
            }
            tftap_buf_putc(out, c);
            newline(out, ++level);
            break;
        }
        case '}':
        case ']':
            newline(out, --level);
            tftap_buf_putc(out, c);
            break;
        case ',':
            tftap_buf_putc(out, c);
            newline(out, level);
            break;
        case ':':
            tftap_buf_append(out, ": ", 2);
            break;
        case ' ':
        case '\n':
        case '\t':
        case '\r':
            break;
        default:
            tftap_buf_putc(out, c);
        }
    }
}

const char *tftap_grpc_status_name(int code)
{
    /* google.golang.org/grpc/codes, in code order. */
    static const char *const names[] = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    if (code < 0 || (size_t)code >= sizeof names / sizeof names[0])
        return NULL;
    return names[code];
}

int tftap_call_expected_close(const char *method, int status)
{
    static const char *const teardown[] = {"/plugin.GRPCBroker/StartStream",
                                           "/plugin.GRPCStdio/StreamStdio",
                                           "/plugin.GRPCController/Shutdown"};
    static const char *const optional[] = {"/tfplugin5.Provider/GetMetadata",
                                           "/tfplugin6.Provider/GetMetadata",
                                           "/tfplugin5.Provider/GetResourceIdentitySchemas",
                                           "/tfplugin6.Provider/GetResourceIdentitySchemas",
                                           "/tfplugin5.Provider/GetFunctions",
                                           "/tfplugin6.Provider/GetFunctions",
                                           "/plugin.GRPCStdio/StreamStdio"};
    if (method == NULL)
        return 0;
    if (status == 0 || status == 1 || status == 14)
        for (size_t i = 0; i < sizeof teardown / sizeof teardown[0]; i++)
            if (strcmp(method, teardown[i]) == 0)
                return TFTAP_CLOSE_TEARDOWN;
    if (status == 12)
        for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
            if (strcmp(method, optional[i]) == 0)
                return TFTAP_CLOSE_OPTIONAL;
    return 0;
}

int tftap_bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (an > bn) - (an < bn);
}

int tftap_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

size_t tftap_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void tftap_log_line(int fd, const char *who, const char *text, size_t len)
{
    struct timespec ts;
    struct tm tm;
    char when[32] = "";
    clock_gettime(CLOCK_REALTIME, &ts);
    if (gmtime_r(&ts.tv_sec, &tm) != NULL)
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[4096 + 512];
    int k = snprintf(out, sizeof out, "%s.%03ldZ pid %ld %s: %.*s\n", when, ts.tv_nsec / 1000000,
                     (long)getpid(), who, (int)(len > INT32_MAX ? INT32_MAX : len), text);
    if (k > 0) {
        size_t w = (size_t)k < sizeof out ? (size_t)k : sizeof out - 1;
        out[w - 1] = '\n';
        ssize_t r = write(fd, out, w);
        (void)r;
    }
}
