/* recorder: the recorder pipe's reader. The tee (tee.c) writes frames
 * (struct recorder_frame, then its payload) and the recorder process reads
 * them here. Both ends are this program, but the reader still trusts
 * nothing: each field is checked before it is used (kind, direction, the
 * payload's length against the bound of its kind, the PROCESS payload's
 * three strings), and a frame that fails is counted as lost, its payload
 * skipped, never a crash. A length no frame could have means the stream is
 * out of step: the reader stops (EOF and a bad stream look the same to the
 * store: what was not read is not recorded). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/recorder_int.h"

/* The pipe read through a buffer: the tee writes many frames at once, so
 * one read usually brings several whole frames. */
struct inbuf {
    int fd;
    size_t off, len;
    char data[65536];
};

static int read_full(struct inbuf *in, void *p, size_t n)
{
    char *c = p;
    size_t have = in->len - in->off;
    if (have > 0) {
        size_t k = have < n ? have : n;
        memcpy(c, in->data + in->off, k);
        in->off += k;
        c += k;
        n -= k;
    }
    while (n > 0) {
        /* Big payloads go straight to their destination; the rest refills
         * the buffer. */
        int direct = n >= sizeof in->data;
        ssize_t r = direct ? read(in->fd, c, n) : read(in->fd, in->data, sizeof in->data);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (direct) {
            c += r;
            n -= (size_t)r;
            continue;
        }
        in->off = 0;
        in->len = (size_t)r;
        size_t k = in->len < n ? in->len : n;
        memcpy(c, in->data, k);
        in->off = k;
        c += k;
        n -= k;
    }
    return 0;
}

static int skip(struct inbuf *in, size_t n)
{
    char chunk[4096];
    while (n > 0) {
        size_t k = n < sizeof chunk ? n : sizeof chunk;
        if (read_full(in, chunk, k) != 0)
            return -1;
        n -= k;
    }
    return 0;
}

/* The most a frame of this kind may carry; 0 for an unknown kind. */
static size_t kind_max(uint32_t kind, size_t max_message)
{
    switch (kind) {
    case RECORDER_FRAME_PROCESS:
        return 3 * RECORDER_TEXT_MAX + 2;
    case RECORDER_FRAME_BEGIN:
    case RECORDER_FRAME_END:
    case RECORDER_FRAME_START_FAILED:
        return RECORDER_TEXT_MAX;
    case RECORDER_FRAME_SPILL:
        return sizeof(((recorder_spill *)0)->name) - 1;
    case RECORDER_FRAME_MESSAGE:
        return max_message;
    default:
        return 0;
    }
}

/* PROCESS: "provider\0version\0binary", exactly two NULs. */
static int split_process(char *p, size_t n, const char **version, const char **binary)
{
    char *a = memchr(p, '\0', n);
    if (a == NULL)
        return -1;
    char *b = memchr(a + 1, '\0', n - (size_t)(a + 1 - p));
    if (b == NULL || memchr(b + 1, '\0', n - (size_t)(b + 1 - p)) != NULL)
        return -1;
    *version = a + 1;
    *binary = b + 1;
    return 0;
}

int recorder_pipe_read(int fd, size_t max_message, const recorder_pipe_sink *sink)
{
    static struct inbuf in; /* one reader per process: the recorder's */
    in.fd = fd;
    in.off = in.len = 0;
    uint64_t bad = 0;
    for (;;) {
        struct recorder_frame f;
        if (read_full(&in, &f, sizeof f) != 0)
            break;
        if (f.kind == RECORDER_FRAME_BYE && f.len == 0) {
            if (sink->bye != NULL)
                sink->bye(sink->ctx);
            continue;
        }
        if (f.kind == RECORDER_FRAME_LOST && f.len == 0) {
            /* The tee's own count of what it dropped, and why: the record's gap. */
            int why_ok = f.a == RECORDER_LOST_QUEUE_FULL || f.a == RECORDER_LOST_TOO_LARGE ||
                         f.a == RECORDER_LOST_SPILL_FAILED;
            sink->lost(sink->ctx, f.call_id,
                       why_ok ? (enum recorder_lost)f.a : RECORDER_LOST_QUEUE_FULL);
            continue;
        }
        size_t max = kind_max(f.kind, max_message);
        if (f.len > RECORDER_FRAME_MAX) {
            /* No tee writes this: the stream is out of step. */
            sink->lost(sink->ctx, 1, RECORDER_LOST_MALFORMED);
            bad++;
            break;
        }
        if (max == 0 || f.len > max ||
            ((f.kind == RECORDER_FRAME_MESSAGE || f.kind == RECORDER_FRAME_SPILL) &&
             f.a != RECORDER_REQUEST && f.a != RECORDER_RESPONSE)) {
            sink->lost(sink->ctx, 1, RECORDER_LOST_MALFORMED);
            bad++;
            if (skip(&in, f.len) != 0)
                break;
            continue;
        }
        char *payload = malloc((size_t)f.len + 1);
        if (payload == NULL) {
            sink->lost(sink->ctx, 1, RECORDER_LOST_MALFORMED);
            if (skip(&in, f.len) != 0)
                break;
            continue;
        }
        if (read_full(&in, payload, f.len) != 0) {
            free(payload);
            break;
        }
        payload[f.len] = '\0';
        switch (f.kind) {
        case RECORDER_FRAME_PROCESS: {
            const char *version, *binary;
            if (split_process(payload, f.len, &version, &binary) != 0) {
                sink->lost(sink->ctx, 1, RECORDER_LOST_MALFORMED);
                bad++;
                break;
            }
            sink->process(sink->ctx, payload, version[0] != '\0' ? version : NULL, binary, f.a,
                          f.b);
            break;
        }
        case RECORDER_FRAME_START_FAILED:
            if (memchr(payload, '\0', f.len) != NULL) {
                sink->lost(sink->ctx, 1, RECORDER_LOST_MALFORMED);
                bad++;
                break;
            }
            if (sink->start_failed != NULL)
                sink->start_failed(sink->ctx, payload);
            break;
        case RECORDER_FRAME_BEGIN:
        case RECORDER_FRAME_END:
            if (memchr(payload, '\0', f.len) != NULL) {
                sink->lost(sink->ctx, 1, RECORDER_LOST_MALFORMED);
                bad++;
                break;
            }
            if (f.kind == RECORDER_FRAME_BEGIN)
                sink->begin(sink->ctx, f.call_id, payload, f.t_us);
            else
                sink->end(sink->ctx, f.call_id, f.t_us, f.a, payload);
            break;
        case RECORDER_FRAME_MESSAGE:
            sink->message(sink->ctx, f.call_id, (enum recorder_direction)f.a, f.t_us,
                          (uint8_t *)payload, f.len);
            payload = NULL; /* the sink's now */
            break;
        case RECORDER_FRAME_SPILL:
            /* A name in the spill directory, nothing else. */
            if (f.len == 0 || memchr(payload, '\0', f.len) != NULL ||
                memchr(payload, '/', f.len) != NULL || payload[0] == '.' || sink->spilled == NULL) {
                sink->lost(sink->ctx, 1, RECORDER_LOST_MALFORMED);
                bad++;
                break;
            }
            sink->spilled(sink->ctx, f.call_id, (enum recorder_direction)f.a, f.t_us, payload);
            break;
        }
        free(payload);
    }
    return bad > 0 ? TFTAP_EPROTO : 0;
}
