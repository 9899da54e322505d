/* common: the project's error codes, a growable byte buffer, digests, the
 * one JSON reader (exact numbers kept), clocks and hex.
 *
 * The lowest layer: every module may include this header; it includes no
 * other project header. Buffers own their bytes; tftap_buf_done() frees them. */
#ifndef TFTAP_COMMON_H
#define TFTAP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

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
    TFTAP_ENOLIB = -11,   /* a shared library could not be loaded */
};

/* A static, lowercase description of an error code. */
const char *tftap_strerror(int err);

/* A shared library opened when first needed instead of linked, so that a
 * process that never needs it (every shim) never maps it, nor the dozens
 * of libraries it pulls in. A caller keeps one static tftap_lib per
 * library and a struct of function pointers its syms point into. */
struct tftap_dlsym {
    const char *name; /* the symbol */
    void **fn;        /* where its address goes (a function pointer's storage) */
};
typedef struct tftap_lib {
    const char *soname; /* "libpq.so.5": the runtime package's name, never a -dev link */
    const struct tftap_dlsym *syms;
    size_t nsyms;
    int state;     /* tftap_lib_load's: 0 untried, 1 loaded, -1 failed */
    char why[256]; /* when it failed: the loader's reason (names the file), one line */
} tftap_lib;
/* Loads lib once per process (thread-safe; later calls return the first
 * answer): dlopen(RTLD_NOW | RTLD_LOCAL), never closed, and every symbol
 * resolved. 0, or TFTAP_ENOLIB with lib->why set and no symbol filled. */
int tftap_lib_load(tftap_lib *lib);

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
void tftap_buf_reset(tftap_buf *b);             /* len = 0, keeps memory */
int tftap_buf_grow(tftap_buf *b, size_t extra); /* tftap_buf_reserve()'s slow path */
/* Room for extra more bytes (and the NUL): 0 or TFTAP_ENOMEM. Inline: the
 * decoder asks for every string it writes. */
static inline int tftap_buf_reserve(tftap_buf *b, size_t extra)
{
    if (!b->failed && b->cap > b->len && extra < b->cap - b->len)
        return 0;
    return tftap_buf_grow(b, extra);
}
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

/* Does the address filter filter keep address: each of its steps
 * ("module.m", "module.m[0]", "tftest5_pet.x") matching the address's step
 * there, its key too when it gives one, the address going on or not
 * ("module.m" keeps "module.m[1].module.n.tftest5_pet.x[\"k\"]"; it keeps no
 * address of a module "mm")? 0 for NULL or a malformed address. */
int tftap_address_matches(const char *filter, const char *address);
/* A filter of a change: NULL keeps everything, a resource type its
 * changes (type), anything else as tftap_address_matches(). */
int tftap_filter_keeps(const char *filter, const char *type, const char *address);

/* Does a recorded CLI command line (a run's args: a JSON array of the
 * words after the program's name) apply a saved plan, "apply [flags]
 * PLANFILE"? 1 or 0 (also for NULL or what is not such an array). */
int tftap_args_apply_saved_plan(const char *args_json);
/* Is the subcommand of such a command line sub ("test")? 1 or 0. */
int tftap_args_subcommand_is(const char *args_json, const char *sub);

/* Bytewise order of two byte strings, the shorter first on a common prefix
 * (what memcmp gives equal-length ones). Either may be NULL when empty. */
int tftap_bytes_cmp(const void *a, size_t an, const void *b, size_t bn);

/* The name of a gRPC status code ("OK", "CANCELLED", ... "UNAUTHENTICATED");
 * NULL for a code gRPC does not define. */
const char *tftap_grpc_status_name(int code);

/* How a call that did not end OK may still have ended as its client
 * expects (v_calls.expected_close is the same rule in SQL, store/migrate.c):
 *   TFTAP_CLOSE_TEARDOWN  go-plugin's streams (StartStream, StreamStdio) and
 *                         Shutdown ending as the provider exits (OK, CANCELLED
 *                         or UNAVAILABLE);
 *   TFTAP_CLOSE_OPTIONAL  UNIMPLEMENTED from a method a provider may lack:
 *                         GetMetadata (optional by the protocol's own words),
 *                         GetResourceIdentitySchemas (providers from before
 *                         identities; Terraform reads it as none),
 *                         GetFunctions (providers from before functions) and
 *                         go-plugin's StreamStdio (plugins from before it);
 *   0                     anything else, OK included.
 * method is the full gRPC path; status the gRPC code. */
enum { TFTAP_CLOSE_TEARDOWN = 1, TFTAP_CLOSE_OPTIONAL = 2 };
int tftap_call_expected_close(const char *method, int status);

/* Digests (OpenSSL). out receives 64 lowercase hex digits and a NUL. */
void tftap_sha256_hex(const void *data, size_t len, char out[65]);
void tftap_hmac_sha256_hex(const void *key, size_t key_len, const void *data, size_t len,
                           char out[65]);
/* HMAC-SHA256 of many values under one key (the recorder's redaction): the
 * key's two padded blocks are hashed once, and a value costs two digests
 * with no allocation. One object serves one thread at a time.
 * tftap_hmac_new returns NULL when out of memory. */
typedef struct tftap_hmac tftap_hmac;
tftap_hmac *tftap_hmac_new(const void *key, size_t key_len);
/* Same digits as tftap_hmac_sha256_hex; -1 when OpenSSL failed (out is ""). */
int tftap_hmac_hex(tftap_hmac *h, const void *data, size_t len, char out[65]);
void tftap_hmac_free(tftap_hmac *h);

/* Read a whole file ("-" = stdin) into *buf, at most max bytes.
 * Returns 0, TFTAP_EIO (errno set) or TFTAP_ELIMIT or TFTAP_ENOMEM. */
int tftap_read_file(const char *path, size_t max, tftap_buf *buf);
/* How many bytes of valid UTF-8 start s (n > 0 bytes), or 0 when invalid. */
size_t tftap_utf8_len(const unsigned char *s, size_t n);
/* Write all n bytes to fd, retrying short writes and EINTR; 0, or -1 with
 * errno (EPIPE: the reader is gone). */
int tftap_write_all(int fd, const void *p, size_t n);
/* One line of the recorders' log (tftap.log beside the database), in its
 * format: "2026-11-24T15:04:05.123Z pid PID WHO: TEXT\n" (4 KiB of text
 * fit whole), written with one write() so that O_APPEND keeps the lines of
 * concurrent writers whole. Best effort: nothing is reported. */
void tftap_log_line(int fd, const char *who, const char *text, size_t len);

/* How many bytes from s (at most n) need no escape in a JSON string: none
 * below 0x20, no '"', no '\\' (and, if del, no 0x7f, which tftap escapes
 * though JSON need not). */
size_t tftap_json_plain_len(const char *s, size_t n, int del);

/* Clocks: wall time in microseconds since the Unix epoch (what the record
 * stores) and a monotonic clock for deadlines and durations. */
int64_t tftap_now_us(void);
int64_t tftap_mono_ms(void);
/* Deadlines for pthread_cond_timedwait on a condition variable whose clock
 * is CLOCK_MONOTONIC: ms from now, or the absolute tftap_mono_ms() time
 * until_ms. A deadline already known as a time takes the second, not the
 * first with (until - now): a second reading of the clock may already be
 * past it, and the negative wait, made unsigned, is 49 days. */
void tftap_deadline_in(struct timespec *ts, unsigned ms);
void tftap_deadline_at(struct timespec *ts, int64_t until_ms);

/* Wait until fd is ready for events (POLLIN, POLLOUT) or the monotonic
 * deadline (tftap_mono_ms) passes; a signal does not end the wait. 0,
 * TFTAP_ELIMIT (the deadline) or TFTAP_EIO (poll failed; errno). */
int tftap_wait_fd(int fd, short events, int64_t deadline_ms);

/* 1 when s ends with suffix. */
int tftap_ends_with(const char *s, const char *suffix);

/* Lowercase hex: out receives 2*n digits and a NUL. */
void tftap_hex_encode(const void *data, size_t n, char *out);
/* The value of one hex digit (either case), or -1. */
int tftap_hex_digit(int c);

/* A small JSON reader that keeps numbers' source text (decoded values carry
 * exact numbers; doubles would round them). Nodes live in one arena. */
enum sj_kind { SJ_NULL, SJ_BOOL, SJ_NUMBER, SJ_STRING, SJ_ARRAY, SJ_OBJECT };
typedef struct sj_node sj_node;
struct sj_node {
    enum sj_kind kind;
    int boolean;
    const char *str; /* number text or unescaped string (NUL-terminated) */
    size_t len;
    const char *key; /* member name when inside an object */
    size_t key_len;
    sj_node *child; /* first element / member */
    sj_node *next;  /* next sibling */
    size_t n;       /* number of children */
};
typedef struct sj_doc sj_doc;
/* How deep the JSON the store wrote or the CLI printed is read. */
#define TFTAP_JSON_MAX_DEPTH 512
/* Parse text (len bytes, strict RFC 8259: escapes, number grammar, no raw
 * control characters, no lone surrogates; one value, whitespace around it)
 * into *out, nesting limited to max_depth (0: TFTAP_JSON_MAX_DEPTH). Strings
 * are unescaped and NUL-terminated but may hold NUL bytes (see len). 0,
 * TFTAP_EDECODE, TFTAP_ELIMIT (nested too deep) or TFTAP_ENOMEM. */
int sj_parse(const char *text, size_t len, unsigned max_depth, sj_doc **out);
/* Check text as sj_parse would (0, TFTAP_EDECODE or TFTAP_ELIMIT; nothing
 * is allocated) and, when it is an object, find its members named
 * keys[0..nkeys): spans[i] is the text of the first member of that name
 * (names compared unescaped, as sj_get does), or {NULL, 0}. For a few
 * members of a large document wanted as text; all spans {NULL, 0} when
 * the text is not JSON. */
typedef struct sj_span {
    const char *text; /* inside the text given, not NUL-terminated */
    size_t len;
} sj_span;
int sj_members(const char *text, size_t len, unsigned max_depth, const char *const *keys,
               size_t nkeys, sj_span *spans);
void sj_free(sj_doc *d);
sj_node *sj_root(sj_doc *d);
sj_node *sj_get(const sj_node *obj, const char *key); /* NULL if absent or not an object */
sj_node *sj_at(const sj_node *arr, size_t i); /* element i; NULL if absent or not an array */
sj_node *sj_get_n(const sj_node *obj, const char *key,
                  size_t key_len); /* key need not end in NUL */
/* Append the node as compact JSON. */
void sj_write(const sj_node *n, tftap_buf *out);
/* As sj_write, with every object's members in byte order of their keys: one
 * text for values that differ only in member order (a provider may encode
 * a map in any order). 0 or TFTAP_ENOMEM. */
int sj_write_sorted(const sj_node *n, tftap_buf *out);
/* 1 if equal values (numbers compared by text, then numerically). */
int sj_equal(const sj_node *a, const sj_node *b);
/* {"$unknown": ...}, {"$sensitive": ...} markers of the decoded-value contract. */
int sj_is_unknown(const sj_node *n);
int sj_is_sensitive(const sj_node *n);

/* ---- values redacted after the fact (redact.c) ---- */

/* A path inside a value, as a key of a set: one segment per member name
 * or element position, unambiguous whatever the names hold. The empty
 * path is the whole value. */
void sj_path_member(tftap_buf *path, const char *key, size_t n);
void sj_path_index(tftap_buf *path, size_t i);

enum { SJ_REDACT_MARKED, SJ_REDACT_EQUAL };
typedef struct sj_redactor {
    /* 1: this (unescaped, non-empty) string is a known secret. */
    int (*secret)(void *ctx, const char *s, size_t n);
    /* NULL, or 1: the value at this path (sj_path_* segments, relative to
     * a root) is marked secret, and all of it with it. */
    int (*marked)(void *ctx, const char *path, size_t len);
    /* The HMAC-SHA256 (64 hex digits) of a value's JSON text. */
    void (*mac)(void *ctx, const char *json, size_t len, char out[65]);
    void *ctx;
    /* The top-level members of the document whose values paths are
     * relative to (a call's "prior_state", "planned_state"...). */
    const char *const *roots;
    size_t nroots;
    /* NULL, or: append s, a message's free text (a provider's error or
     * diagnostic: no value, but words that may quote one), as a JSON
     * string with every secret in it cut out; the number of secrets cut. */
    int64_t (*text)(void *ctx, const char *s, size_t n, tftap_buf *out);
    /* The top-level members whose strings are free text, every one of them
     * given to text instead of being judged whole ("diagnostics"). */
    const char *const *texts;
    size_t ntexts;
    /* Members below the texts whose strings are the protocol's words, not
     * the provider's, and stay as they are ("severity"). */
    const char *const *verbatim;
    size_t nverbatim;
} sj_redactor;
/* Write root as compact JSON into out with every marked value and every
 * string equal to a secret replaced by {"$sensitive":"hmac-sha256:..."}
 * (null stays null, an unknown loses its refinements, a value redacted
 * already stays), and the free text below r->texts cut by r->text.
 * counts[SJ_REDACT_MARKED], counts[SJ_REDACT_EQUAL] are incremented per
 * value replaced (a secret cut out of a text counts as equal). 0 or
 * TFTAP_ENOMEM. */
int sj_redact(const sj_node *root, const sj_redactor *r, tftap_buf *out, int64_t counts[2]);

#endif
