/* proxy: reads the HTTP/2 frames of one relayed connection as they pass, to
 * tell the recorder what each gRPC call carried. The relay forwards the
 * bytes whatever happens here: this file only looks. Its input comes from
 * peers, so every length is bounded and anything it cannot follow (a
 * malformed frame, a header block HPACK cannot decode) ends the watching of
 * that side, counted as lost records, never the relay.
 *
 * What it follows, per side:
 *   the client's preface (24 bytes), then frames: 9-byte header, payload;
 *   HEADERS/CONTINUATION/PUSH_PROMISE: header blocks, always decoded, in
 *     order, because HPACK's dynamic table is shared by every block of a
 *     side (a block skipped would garble every later one);
 *   DATA: gRPC messages (1-byte compressed flag, 4-byte big-endian length,
 *     payload), reassembled across frames, handed to the tee whole;
 *   RST_STREAM: the call ends there; SETTINGS: the HPACK table size a side
 *     allows its peer, applied when the peer acknowledges it.
 * The client opens the calls (odd stream ids, increasing); the provider's
 * final HEADERS (trailers, or a trailers-only answer) carry grpc-status. */
#include "config.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "proxy/proxy_int.h"

#define H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN 24
#define H2_HEADER_BLOCK_MAX ((size_t)1 << 20) /* per block, all fragments */
#define H2_MESSAGE_MAX RECORDER_MESSAGE_MAX   /* larger ones could not be recorded */
#define H2_MESSAGE_FIRST ((size_t)64 << 10)   /* first allocation for a message */
#define H2_OPEN_CALLS_MAX 65536               /* calls watched at once */
#define H2_TEXT_MAX 4096                      /* :path, grpc-message kept */
#define H2_SETTINGS_UNACKED_MAX 64            /* SETTINGS a side sent, not yet acknowledged */

enum {
    F_DATA = 0,
    F_HEADERS = 1,
    F_RST_STREAM = 3,
    F_SETTINGS = 4,
    F_PUSH_PROMISE = 5,
    F_CONTINUATION = 9
};
enum {
    FL_END_STREAM = 0x1,
    FL_ACK = 0x1,
    FL_END_HEADERS = 0x4,
    FL_PADDED = 0x8,
    FL_PRIORITY = 0x20
};
enum { SETTINGS_HEADER_TABLE_SIZE = 1 };

/* gRPC status codes used here. */
enum {
    ST_CANCELLED = 1,
    ST_UNKNOWN = 2,
    ST_DEADLINE_EXCEEDED = 4,
    ST_RESOURCE_EXHAUSTED = 8,
    ST_PERMISSION_DENIED = 7,
    ST_UNIMPLEMENTED = 12,
    ST_INTERNAL = 13,
    ST_UNAVAILABLE = 14
};

/* One gRPC message being reassembled. */
struct h2_msg {
    uint8_t prefix[5];
    unsigned prefix_got;
    uint32_t len;
    uint32_t got;
    uint32_t cap;         /* of buf: grows with the bytes that come, not with the
                           * length the peer claims */
    uint8_t *buf;         /* NULL while skipping one too big to keep */
    recorder_spill spill; /* a big one goes into a spill file instead (fd >= 0) */
};

struct h2_call {
    uint32_t stream;
    uint64_t call_id;
    int64_t deadline_us;  /* from grpc-timeout; 0: none */
    struct h2_msg msg[2]; /* by side */
};

struct h2_side {
    enum proxy_h2_side side;
    int stopped;         /* gave up on this side */
    size_t preface_left; /* client side: preface bytes still to pass */
    uint8_t hdr[9];
    unsigned hdr_got;
    int in_frame;
    uint32_t flen, fleft, fstream;
    uint8_t ftype, fflags;
    int data_padlen_next; /* DATA: the next byte is its pad length */
    uint32_t data_pad;    /* DATA: trailing padding bytes */
    tftap_buf payload;    /* a non-DATA frame's payload */
    tftap_buf block;      /* header block being gathered */
    int in_block;         /* CONTINUATIONs expected */
    uint32_t block_stream;
    int block_end_stream;
    int block_is_push;
    nghttp2_hd_inflater *hd;
    /* The SETTINGS this side sent and its peer has not acknowledged yet,
     * oldest first (ACKs come in order, RFC 9113 6.5.3): for each, whether
     * it set SETTINGS_HEADER_TABLE_SIZE, the smallest and the last value. */
    struct {
        int has;
        uint32_t min, last;
    } unacked[H2_SETTINGS_UNACKED_MAX];
    unsigned unacked_head, unacked_n;
};

struct proxy_h2watch {
    recorder_tee *tee;
    atomic_uint_least64_t *next_call_id;
    atomic_int *open_calls;
    struct h2_side sides[2];
    struct h2_call **calls;
    size_t ncalls, calls_cap;
    uint32_t max_client_stream;
    char problem[160];
    /* Scratch for one header block's fields of interest. */
    tftap_buf path, grpc_message;
    int64_t grpc_timeout_us;
    int grpc_status, http_status;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void call_end(proxy_h2watch *w, struct h2_call *c, int64_t t_us, int status,
                     const char *message);

/* Give up on the connection (what one side says no longer parses, so the
 * other side's answers cannot be paired either). Its open calls end here,
 * in the record, with what is known. */
static void stop_side(proxy_h2watch *w, struct h2_side *s, const char *why)
{
    if (s->stopped)
        return;
    w->sides[0].stopped = w->sides[1].stopped = 1;
    if (w->problem[0] == '\0')
        snprintf(w->problem, sizeof w->problem, "%s side: %s",
                 s->side == PROXY_H2_FROM_CLIENT ? "client" : "provider", why);
    recorder_tee_lost(w->tee);
    while (w->ncalls > 0)
        call_end(w, w->calls[w->ncalls - 1], tftap_now_us(), ST_UNKNOWN,
                 "not recorded to its end (the relay could not follow the connection)");
}

static struct h2_call *call_find(proxy_h2watch *w, uint32_t stream)
{
    for (size_t i = 0; i < w->ncalls; i++)
        if (w->calls[i]->stream == stream)
            return w->calls[i];
    return NULL;
}

static void call_end(proxy_h2watch *w, struct h2_call *c, int64_t t_us, int status,
                     const char *message)
{
    recorder_tee_end(w->tee, c->call_id, t_us, status, message);
    size_t i = 0;
    while (i < w->ncalls && w->calls[i] != c)
        i++;
    assert(i < w->ncalls); /* only an open call ends, once */
    if (i < w->ncalls)
        w->calls[i] = w->calls[--w->ncalls];
    for (int k = 0; k < 2; k++) {
        free(c->msg[k].buf);
        recorder_tee_spill_abort(w->tee, &c->msg[k].spill); /* never whole now */
    }
    free(c);
    int was_open = atomic_fetch_sub(w->open_calls, 1);
    assert(was_open > 0);
    (void)was_open;
}

static void call_begin(proxy_h2watch *w, uint32_t stream, const char *method, int64_t t_us,
                       int64_t timeout_us)
{
    if (w->ncalls >= H2_OPEN_CALLS_MAX) {
        recorder_tee_lost(w->tee);
        return;
    }
    if (w->ncalls == w->calls_cap) {
        size_t cap = w->calls_cap ? w->calls_cap * 2 : 16;
        struct h2_call **n = realloc(w->calls, cap * sizeof *n);
        if (n == NULL) {
            recorder_tee_lost(w->tee);
            return;
        }
        w->calls = n;
        w->calls_cap = cap;
    }
    struct h2_call *c = calloc(1, sizeof *c);
    if (c == NULL) {
        recorder_tee_lost(w->tee);
        return;
    }
    c->stream = stream;
    c->msg[0].spill.fd = c->msg[1].spill.fd = -1;
    c->call_id = atomic_fetch_add(w->next_call_id, 1) + 1;
    c->deadline_us = timeout_us > 0 ? t_us + timeout_us : 0;
    w->calls[w->ncalls++] = c;
    atomic_fetch_add(w->open_calls, 1);
    recorder_tee_begin(w->tee, c->call_id, method, t_us);
}

/* ---- header blocks ------------------------------------------------------- */

static int name_is(const nghttp2_nv *nv, const char *name)
{
    size_t n = strlen(name);
    return nv->namelen == n && memcmp(nv->name, name, n) == 0;
}

static int parse_small_int(const uint8_t *p, size_t n, int *out)
{
    if (n == 0 || n > 9)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* grpc-timeout: at most 8 digits and a unit (H M S m u n). */
static int64_t parse_timeout_us(const uint8_t *p, size_t n)
{
    if (n < 2 || n > 9)
        return 0;
    int64_t v = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (p[i] - '0');
    }
    switch (p[n - 1]) {
    case 'H':
        return v * 3600 * 1000000;
    case 'M':
        return v * 60 * 1000000;
    case 'S':
        return v * 1000000;
    case 'm':
        return v * 1000;
    case 'u':
        return v;
    case 'n':
        return v / 1000 > 0 ? v / 1000 : 1;
    default:
        return 0;
    }
}

/* grpc-message is percent-encoded; keep at most H2_TEXT_MAX bytes. */
static void put_percent_decoded(tftap_buf *b, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n && b->len < H2_TEXT_MAX; i++) {
        int hi, lo;
        if (p[i] == '%' && i + 2 < n && (hi = tftap_hex_digit(p[i + 1])) >= 0 &&
            (lo = tftap_hex_digit(p[i + 2])) >= 0) {
            tftap_buf_putc(b, (char)(hi << 4 | lo));
            i += 2;
        } else {
            tftap_buf_putc(b, (char)p[i]);
        }
    }
}

static void take_field(proxy_h2watch *w, enum proxy_h2_side side, const nghttp2_nv *nv)
{
    if (side == PROXY_H2_FROM_CLIENT) {
        if (name_is(nv, ":path") && w->path.len == 0) /* a repeated one is not the method */
            tftap_buf_append(&w->path, nv->value,
                             nv->valuelen < H2_TEXT_MAX ? nv->valuelen : H2_TEXT_MAX);
        else if (name_is(nv, "grpc-timeout"))
            w->grpc_timeout_us = parse_timeout_us(nv->value, nv->valuelen);
        return;
    }
    if (name_is(nv, "grpc-status"))
        (void)parse_small_int(nv->value, nv->valuelen, &w->grpc_status);
    else if (name_is(nv, "grpc-message"))
        put_percent_decoded(&w->grpc_message, nv->value, nv->valuelen);
    else if (name_is(nv, ":status"))
        (void)parse_small_int(nv->value, nv->valuelen, &w->http_status);
}

/* gRPC's mapping of an HTTP status, for answers without grpc-status. */
static int status_of_http(int http)
{
    switch (http) {
    case 400:
        return ST_INTERNAL;
    case 401:
        return 16; /* UNAUTHENTICATED */
    case 403:
        return ST_PERMISSION_DENIED;
    case 404:
        return ST_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return ST_UNAVAILABLE;
    default:
        return ST_UNKNOWN;
    }
}

/* Decode a whole header block (every field, to keep the table in step)
 * and act on it. */
static void header_block(proxy_h2watch *w, struct h2_side *s, int64_t t_us)
{
    tftap_buf_reset(&w->path);
    tftap_buf_reset(&w->grpc_message);
    w->grpc_timeout_us = 0;
    w->grpc_status = -1;
    w->http_status = 0;

    const uint8_t *in = (const uint8_t *)s->block.data;
    size_t left = s->block.len;
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t used = nghttp2_hd_inflate_hd2(s->hd, &nv, &flags, in, left, 1);
        if (used < 0) {
            stop_side(w, s, nghttp2_strerror((int)used));
            return;
        }
        in += used;
        left -= (size_t)used;
        if (flags & NGHTTP2_HD_INFLATE_EMIT)
            take_field(w, s->side, &nv);
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(s->hd);
            break;
        }
        if (used == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) {
            stop_side(w, s, "header block ends early");
            return;
        }
    }
    if (tftap_buf_failed(&w->path) || tftap_buf_failed(&w->grpc_message)) {
        stop_side(w, s, "out of memory");
        return;
    }
    if (s->block_is_push)
        return; /* gRPC never pushes; decoded only to keep the table */

    uint32_t stream = s->block_stream;
    if (s->side == PROXY_H2_FROM_CLIENT) {
        /* A new call; a later block on a known stream would be trailers
         * from the client, which gRPC does not send. */
        if (stream > w->max_client_stream) {
            w->max_client_stream = stream;
            call_begin(w, stream, tftap_buf_cstr(&w->path), t_us, w->grpc_timeout_us);
        }
        return;
    }
    if (!s->block_end_stream)
        return; /* the answer's initial metadata */
    struct h2_call *c = call_find(w, stream);
    if (c == NULL)
        return;
    int status = w->grpc_status;
    const char *message = tftap_buf_cstr(&w->grpc_message);
    if (status < 0) {
        status = w->http_status != 0 && w->http_status != 200 ? status_of_http(w->http_status)
                                                              : ST_UNKNOWN;
        message = "answer without grpc-status";
    }
    call_end(w, c, t_us, status, message);
}

/* ---- frames -------------------------------------------------------------- */

/* RST_STREAM's error code as the gRPC status a client reports. */
static int status_of_reset(uint32_t code)
{
    switch (code) {
    case 0x7:
        return ST_UNAVAILABLE; /* REFUSED_STREAM */
    case 0x8:
        return ST_CANCELLED; /* CANCEL */
    case 0xb:
        return ST_RESOURCE_EXHAUSTED; /* ENHANCE_YOUR_CALM */
    case 0xc:
        return ST_PERMISSION_DENIED; /* INADEQUATE_SECURITY */
    default:
        return ST_INTERNAL;
    }
}

static void on_reset(proxy_h2watch *w, struct h2_side *s, int64_t t_us)
{
    if (s->payload.len != 4) {
        stop_side(w, s, "RST_STREAM of the wrong size");
        return;
    }
    struct h2_call *c = call_find(w, s->fstream);
    if (c == NULL)
        return;
    uint32_t code = be32((const uint8_t *)s->payload.data);
    int status = status_of_reset(code);
    const char *message =
        s->side == PROXY_H2_FROM_CLIENT ? "cancelled by the client" : "reset by the provider";
    /* A client gives up at its deadline with a plain CANCEL. */
    if (status == ST_CANCELLED && c->deadline_us != 0 && t_us >= c->deadline_us) {
        status = ST_DEADLINE_EXCEEDED;
        message = "deadline exceeded";
    }
    call_end(w, c, t_us, status, message);
}

static void on_settings(proxy_h2watch *w, struct h2_side *s)
{
    struct h2_side *peer = &w->sides[!s->side];
    if (s->fflags & FL_ACK) {
        /* s acknowledges peer's oldest SETTINGS: s's encoder now uses the
         * table size it set, so s's blocks decode with it. When it changed
         * more than once before s's next block, that block starts with
         * more than one size update (the smallest first, RFC 7541 4.2):
         * the inflater is told the smallest, then the last. */
        if (peer->unacked_n == 0)
            return; /* an ACK of nothing: the peer will complain, not us */
        unsigned i = peer->unacked_head;
        peer->unacked_head = (i + 1) % H2_SETTINGS_UNACKED_MAX;
        peer->unacked_n--;
        if (!peer->unacked[i].has)
            return;
        if (nghttp2_hd_inflate_change_table_size(s->hd, peer->unacked[i].min) != 0 ||
            (peer->unacked[i].last != peer->unacked[i].min &&
             nghttp2_hd_inflate_change_table_size(s->hd, peer->unacked[i].last) != 0))
            stop_side(w, s, "HPACK table size change failed");
        return;
    }
    if (s->payload.len % 6 != 0) {
        stop_side(w, s, "SETTINGS of the wrong size");
        return;
    }
    if (s->unacked_n == H2_SETTINGS_UNACKED_MAX) {
        stop_side(w, s, "too many SETTINGS not acknowledged");
        return;
    }
    unsigned slot = (s->unacked_head + s->unacked_n) % H2_SETTINGS_UNACKED_MAX;
    s->unacked[slot].has = 0;
    const uint8_t *p = (const uint8_t *)s->payload.data;
    for (size_t i = 0; i + 6 <= s->payload.len; i += 6) {
        if (((uint32_t)p[i] << 8 | p[i + 1]) == SETTINGS_HEADER_TABLE_SIZE) {
            uint32_t v = be32(p + i + 2);
            if (!s->unacked[slot].has || v < s->unacked[slot].min)
                s->unacked[slot].min = v;
            s->unacked[slot].last = v;
            s->unacked[slot].has = 1;
        }
    }
    s->unacked_n++;
}

/* The fragment of a HEADERS or PUSH_PROMISE payload, without padding,
 * priority or promised stream id. */
static int fragment_of(struct h2_side *s, const uint8_t **frag, size_t *len)
{
    /* An empty payload may have no storage yet. */
    const uint8_t *p =
        s->payload.data != NULL ? (const uint8_t *)s->payload.data : (const uint8_t *)"";
    size_t n = s->payload.len, pad = 0;
    if (s->fflags & FL_PADDED) {
        if (n < 1)
            return -1;
        pad = p[0];
        p++, n--;
    }
    size_t skip = s->ftype == F_PUSH_PROMISE ? 4 : (s->fflags & FL_PRIORITY) ? 5 : 0;
    if (n < skip + pad)
        return -1;
    *frag = p + skip;
    *len = n - skip - pad;
    return 0;
}

static void block_add(proxy_h2watch *w, struct h2_side *s, const uint8_t *p, size_t n)
{
    if (s->block.len + n > H2_HEADER_BLOCK_MAX) {
        stop_side(w, s, "header block over 1 MiB");
        return;
    }
    tftap_buf_append(&s->block, p, n);
    if (tftap_buf_failed(&s->block))
        stop_side(w, s, "out of memory");
}

static void frame_done(proxy_h2watch *w, struct h2_side *s, int64_t t_us)
{
    s->in_frame = 0;
    s->hdr_got = 0;
    if (s->in_block && s->ftype != F_CONTINUATION) {
        stop_side(w, s, "header block interrupted");
        return;
    }
    switch (s->ftype) {
    case F_DATA:
        if ((s->fflags & FL_END_STREAM) && s->side == PROXY_H2_FROM_PROVIDER) {
            struct h2_call *c = call_find(w, s->fstream);
            if (c != NULL)
                call_end(w, c, t_us, ST_INTERNAL, "answer ended without trailers");
        }
        return;
    case F_HEADERS:
    case F_PUSH_PROMISE: {
        const uint8_t *frag;
        size_t len;
        if (fragment_of(s, &frag, &len) != 0) {
            stop_side(w, s, "HEADERS padding beyond the frame");
            return;
        }
        tftap_buf_reset(&s->block);
        s->block_stream = s->fstream;
        s->block_end_stream = s->ftype == F_HEADERS && (s->fflags & FL_END_STREAM);
        s->block_is_push = s->ftype == F_PUSH_PROMISE;
        block_add(w, s, frag, len);
        s->in_block = !(s->fflags & FL_END_HEADERS);
        break;
    }
    case F_CONTINUATION:
        if (!s->in_block || s->fstream != s->block_stream) {
            stop_side(w, s, "CONTINUATION out of place");
            return;
        }
        block_add(w, s, (const uint8_t *)s->payload.data, s->payload.len);
        s->in_block = !(s->fflags & FL_END_HEADERS);
        break;
    case F_RST_STREAM:
        on_reset(w, s, t_us);
        return;
    case F_SETTINGS:
        on_settings(w, s);
        return;
    default:
        return; /* PING, GOAWAY, WINDOW_UPDATE, PRIORITY, extensions */
    }
    if (!s->stopped && !s->in_block)
        header_block(w, s, t_us);
}

/* DATA payload bytes of one stream: gRPC messages. */
static void data_bytes(proxy_h2watch *w, struct h2_side *s, const uint8_t *p, size_t n,
                       int64_t t_us)
{
    struct h2_call *c = call_find(w, s->fstream);
    if (c == NULL)
        return;
    struct h2_msg *m = &c->msg[s->side];
    enum recorder_direction dir =
        s->side == PROXY_H2_FROM_CLIENT ? RECORDER_REQUEST : RECORDER_RESPONSE;
    while (n > 0) {
        if (m->prefix_got < 5) {
            size_t k = 5 - m->prefix_got < n ? 5 - m->prefix_got : n;
            memcpy(m->prefix + m->prefix_got, p, k);
            m->prefix_got += (unsigned)k;
            p += k, n -= k;
            if (m->prefix_got < 5)
                return;
            m->len = be32(m->prefix + 1);
            m->got = 0;
            m->buf = NULL;
            m->spill.fd = -1;
            if (w->tee != NULL) { /* without a recorder, nothing to keep */
                m->cap = m->len < H2_MESSAGE_FIRST ? (m->len > 0 ? m->len : 1)
                                                   : (uint32_t)H2_MESSAGE_FIRST;
                if (m->len >= RECORDER_SPILL_MIN && m->len <= RECORDER_SPILL_MAX)
                    (void)recorder_tee_spill_open(w->tee, c->call_id, dir, &m->spill);
                if (m->spill.fd < 0 && m->len <= H2_MESSAGE_MAX)
                    m->buf = malloc(m->cap);
                if (m->buf == NULL && m->spill.fd < 0)
                    recorder_tee_lost_as(w->tee, m->len > H2_MESSAGE_MAX
                                                     ? (m->len > RECORDER_SPILL_MAX
                                                            ? RECORDER_LOST_TOO_LARGE
                                                            : RECORDER_LOST_SPILL_FAILED)
                                                     : RECORDER_LOST_QUEUE_FULL);
            }
        } else {
            size_t k = m->len - m->got < n ? m->len - m->got : n;
            if (m->buf != NULL && m->got + k > m->cap) {
                size_t cap = (size_t)m->cap * 2;
                if (cap < m->got + k)
                    cap = m->got + k;
                if (cap > m->len)
                    cap = m->len;
                uint8_t *nb = realloc(m->buf, cap);
                if (nb == NULL) {
                    free(m->buf);
                    m->buf = NULL;
                    recorder_tee_lost(w->tee);
                } else {
                    m->buf = nb;
                    m->cap = (uint32_t)cap;
                }
            }
            if (m->buf != NULL)
                memcpy(m->buf + m->got, p, k);
            else if (m->spill.fd >= 0)
                (void)recorder_tee_spill_write(w->tee, &m->spill, p, k); /* counts a failure */
            m->got += (uint32_t)k;
            p += k, n -= k;
        }
        if (m->got == m->len) {
            if (m->buf != NULL)
                recorder_tee_message(w->tee, c->call_id, dir, t_us, m->buf, m->len);
            else
                recorder_tee_spill_done(w->tee, &m->spill, c->call_id, dir, t_us);
            m->buf = NULL;
            m->prefix_got = 0;
        }
    }
}

void proxy_h2watch_feed(proxy_h2watch *w, enum proxy_h2_side side, const uint8_t *p, size_t n,
                        int64_t t_us)
{
    struct h2_side *s = &w->sides[side];
    while (n > 0 && !s->stopped) {
        if (s->preface_left > 0) {
            size_t k = s->preface_left < n ? s->preface_left : n;
            size_t at = H2_PREFACE_LEN - s->preface_left;
            if (memcmp(p, &H2_PREFACE[at], k) != 0) {
                stop_side(w, s, "no HTTP/2 preface");
                return;
            }
            s->preface_left -= k;
            p += k, n -= k;
            continue;
        }
        if (!s->in_frame) {
            size_t k = 9 - s->hdr_got < n ? 9 - s->hdr_got : n;
            memcpy(s->hdr + s->hdr_got, p, k);
            s->hdr_got += (unsigned)k;
            p += k, n -= k;
            if (s->hdr_got < 9)
                return;
            s->flen = (uint32_t)s->hdr[0] << 16 | (uint32_t)s->hdr[1] << 8 | s->hdr[2];
            s->ftype = s->hdr[3];
            s->fflags = s->hdr[4];
            s->fstream = be32(s->hdr + 5) & 0x7fffffffu;
            s->fleft = s->flen;
            s->in_frame = 1;
            s->data_padlen_next = s->ftype == F_DATA && (s->fflags & FL_PADDED);
            s->data_pad = 0;
            tftap_buf_reset(&s->payload);
            if (s->ftype != F_DATA && s->flen > H2_HEADER_BLOCK_MAX + 16) {
                stop_side(w, s, "frame too large to follow");
                return;
            }
            if (s->fleft == 0)
                frame_done(w, s, t_us);
            continue;
        }
        if (s->ftype == F_DATA) {
            if (s->data_padlen_next) {
                s->data_padlen_next = 0;
                s->data_pad = p[0];
                p++, n--, s->fleft--;
                if (s->data_pad > s->fleft) {
                    stop_side(w, s, "DATA padding beyond the frame");
                    return;
                }
            } else if (s->fleft > s->data_pad) {
                size_t body = s->fleft - s->data_pad;
                size_t k = body < n ? body : n;
                data_bytes(w, s, p, k, t_us);
                p += k, n -= k, s->fleft -= (uint32_t)k;
            } else {
                size_t k = s->fleft < n ? s->fleft : n;
                p += k, n -= k, s->fleft -= (uint32_t)k;
            }
        } else {
            size_t k = s->fleft < n ? s->fleft : n;
            tftap_buf_append(&s->payload, p, k);
            if (tftap_buf_failed(&s->payload)) {
                stop_side(w, s, "out of memory");
                return;
            }
            p += k, n -= k, s->fleft -= (uint32_t)k;
        }
        if (s->fleft == 0)
            frame_done(w, s, t_us);
    }
}

int proxy_h2watch_new(recorder_tee *tee, atomic_uint_least64_t *next_call_id,
                      atomic_int *open_calls, proxy_h2watch **out)
{
    *out = NULL;
    proxy_h2watch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return TFTAP_ENOMEM;
    w->tee = tee;
    w->next_call_id = next_call_id;
    w->open_calls = open_calls;
    for (int i = 0; i < 2; i++) {
        w->sides[i].side = (enum proxy_h2_side)i;
        if (nghttp2_hd_inflate_new(&w->sides[i].hd) != 0) {
            proxy_h2watch_free(w, 0);
            return TFTAP_ENOMEM;
        }
    }
    w->sides[PROXY_H2_FROM_CLIENT].preface_left = H2_PREFACE_LEN;
    *out = w;
    return 0;
}

const char *proxy_h2watch_problem(const proxy_h2watch *w)
{
    return w->problem[0] != '\0' ? w->problem : NULL;
}

void proxy_h2watch_free(proxy_h2watch *w, int64_t t_us)
{
    if (w == NULL)
        return;
    while (w->ncalls > 0)
        call_end(w, w->calls[w->ncalls - 1], t_us, ST_UNAVAILABLE, "connection closed");
    free(w->calls);
    for (int i = 0; i < 2; i++) {
        if (w->sides[i].hd != NULL)
            nghttp2_hd_inflate_del(w->sides[i].hd);
        tftap_buf_done(&w->sides[i].payload);
        tftap_buf_done(&w->sides[i].block);
    }
    tftap_buf_done(&w->path);
    tftap_buf_done(&w->grpc_message);
    free(w);
}
