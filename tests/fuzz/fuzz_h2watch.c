/* libFuzzer target: the relay's HTTP/2 watcher (proxy/h2watch.c), which
 * follows both directions of a relayed connection. An input is a sequence
 * of chunks, fed in order:
 *
 *   1 byte   low bit: the side (0 the client, 1 the provider); the other
 *            bits: how far the clock moves first, in 100 ms steps, so that
 *            grpc-timeout deadlines can pass
 *   2 bytes  big-endian length, clamped to what remains
 *   n bytes  that side's next bytes, as relayed
 *
 * Without a tee the watcher skips gRPC messages, so it records through a
 * real one into a memory file, read back and checked once the tee is freed:
 * each call begins once (ids in order, method within the watcher's bound)
 * and ends once after that; messages belong to open calls and stay within
 * the tee's bound; what the tee counts as dropped reaches the record as
 * LOST frames. The watcher's counters must agree with the record. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proxy/proxy_int.h"

#define TEXT_MAX 4096                 /* h2watch.c keeps this much :path, grpc-message */
#define TEE_BYTES ((size_t)256 << 10) /* small, so that inputs reach the tee's bound */
#define STEP_US 100000
#define FIRST_ID 1000 /* call ids are FIRST_ID + 1, + 2, ... */

enum { CALL_OPEN = 1, CALL_ENDED = 2 };

/* The record as read back. */
struct record {
    uint8_t *state; /* by call id - FIRST_ID - 1 */
    int byes;       /* RECORDER_FRAME_BYE frames: one, last */
    size_t cap;
    uint64_t begins;
    uint64_t lost; /* the LOST frames' counts */
};

static int record_fd = -1; /* emptied for each input */

static uint8_t *state_of(struct record *r, uint64_t call_id)
{
    if (call_id <= FIRST_ID || call_id > FIRST_ID + r->begins)
        abort(); /* an id the watcher never began */
    return &r->state[call_id - FIRST_ID - 1];
}

static void check_event(struct record *r, const struct recorder_frame *f)
{
    if (r->byes != 0 && f->kind != RECORDER_FRAME_BYE)
        abort(); /* nothing follows the goodbye */
    switch (f->kind) {
    case RECORDER_FRAME_BEGIN:
        if (f->call_id != FIRST_ID + r->begins + 1 || f->len > TEXT_MAX)
            abort();
        if (r->begins == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 64;
            uint8_t *s = realloc(r->state, cap);
            if (s == NULL)
                abort();
            r->state = s;
            r->cap = cap;
        }
        r->state[r->begins++] = CALL_OPEN;
        return;
    case RECORDER_FRAME_MESSAGE:
        if ((f->a != RECORDER_REQUEST && f->a != RECORDER_RESPONSE) || f->len > TEE_BYTES ||
            *state_of(r, f->call_id) != CALL_OPEN)
            abort();
        return;
    case RECORDER_FRAME_END: {
        uint8_t *s = state_of(r, f->call_id);
        if (*s != CALL_OPEN || f->a < 0 || f->len > TEXT_MAX) /* a: a gRPC status */
            abort();
        *s = CALL_ENDED;
        return;
    }
    case RECORDER_FRAME_LOST: /* what the tee dropped (or the watcher lost) */
        if (f->len != 0 || f->call_id == 0 || r->byes != 0)
            abort();
        r->lost += f->call_id;
        return;
    case RECORDER_FRAME_BYE: /* the tee's last frame, once */
        if (f->len != 0 || r->byes++ != 0)
            abort();
        return;
    default:
        abort(); /* the watcher reports calls only */
    }
}

/* Read back what the tee wrote, frame by frame, and empty the file. */
static void read_record(struct record *r)
{
    off_t end = lseek(record_fd, 0, SEEK_END);
    if (end < 0)
        abort();
    uint8_t *all = malloc(end > 0 ? (size_t)end : 1);
    if (all == NULL || pread(record_fd, all, (size_t)end, 0) != (ssize_t)end)
        abort();
    size_t pos = 0, n = (size_t)end;
    while (pos < n) {
        struct recorder_frame f;
        if (n - pos < sizeof f)
            abort(); /* a frame header cut short */
        memcpy(&f, all + pos, sizeof f);
        pos += sizeof f;
        if (n - pos < f.len)
            abort(); /* a payload cut short */
        pos += f.len;
        check_event(r, &f);
    }
    free(all);
    if (ftruncate(record_fd, 0) != 0 || lseek(record_fd, 0, SEEK_SET) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct record r = {0};
    recorder_tee *tee = NULL;
    proxy_h2watch *w = NULL;
    atomic_uint_least64_t next_id = FIRST_ID;
    atomic_int open_calls = 0;

    if (record_fd < 0) {
        record_fd = memfd_create("fuzz_h2watch", MFD_CLOEXEC);
        /* Each input starts and stops the tee's thread; under ASan a small
         * stack makes that several times cheaper (its shadow is cleared). */
        pthread_attr_t a;
        if (pthread_attr_init(&a) == 0) {
            (void)pthread_attr_setstacksize(&a, (size_t)256 << 10);
            (void)pthread_setattr_default_np(&a);
            pthread_attr_destroy(&a);
        }
    }
    if (record_fd < 0 || recorder_tee_new(record_fd, TEE_BYTES, &tee) != 0 || tee == NULL ||
        proxy_h2watch_new(tee, &next_id, &open_calls, &w) != 0)
        abort(); /* the harness itself, not the input */
    int64_t t_us = 1700000000000000;
    uint64_t last_id = FIRST_ID, id_at_problem = 0;
    int stopped = 0;
    while (size >= 3) {
        enum proxy_h2_side side = (data[0] & 1) ? PROXY_H2_FROM_PROVIDER : PROXY_H2_FROM_CLIENT;
        t_us += (int64_t)(data[0] >> 1) * STEP_US;
        size_t n = (size_t)data[1] << 8 | data[2];
        data += 3, size -= 3;
        if (n > size)
            n = size;
        proxy_h2watch_feed(w, side, data, n, t_us);
        data += n, size -= n;

        uint64_t id = atomic_load(&next_id);
        int open = atomic_load(&open_calls);
        if (id < last_id || open < 0 || (uint64_t)open > id - FIRST_ID)
            abort();
        last_id = id;
        const char *problem = proxy_h2watch_problem(w);
        if (stopped && problem == NULL)
            abort(); /* a problem stays */
        if (problem != NULL) {
            if (problem[0] == '\0')
                abort();
            if (!stopped) {
                stopped = 1;
                id_at_problem = id;
            }
            /* Stopped watching: its calls ended, no new ones begin. */
            if (open != 0 || id != id_at_problem)
                abort();
        }
    }

    proxy_h2watch_free(w, t_us + STEP_US);
    if (atomic_load(&open_calls) != 0 || atomic_load(&next_id) < last_id)
        abort();
    uint64_t dropped = recorder_tee_dropped(tee); /* the watcher is done: final */
    recorder_tee_free(tee);                       /* writes out everything queued */
    read_record(&r);
    /* The tee said goodbye: it ended on purpose. */
    if (r.byes != 1)
        abort();
    /* Every loss was told to the recorder, once. */
    if (r.lost != dropped)
        abort();
    /* Every call begun was recorded, and ended. */
    if (r.begins != atomic_load(&next_id) - FIRST_ID)
        abort();
    for (uint64_t i = 0; i < r.begins; i++)
        if (r.state[i] != CALL_ENDED)
            abort();
    free(r.state);
    return 0;
}
