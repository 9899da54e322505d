/* libFuzzer target: the recorder pipe's reader (recorder/pipe.c), which
 * the recorder process runs over the frames the tee writes. An input is the
 * pipe's bytes. The sink checks what the reader promises: every string is
 * NUL-terminated within its bound, directions are the two there are,
 * messages are within the bound given, and every frame it passes on or
 * counts as lost came from the input (no more frames than the input could
 * hold). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proxy/proxy_int.h"

#define MAX_MESSAGE ((size_t)1 << 16) /* small, so that inputs pass it */

struct seen {
    uint64_t frames, lost;
    uint64_t touched;
};

static void text(const char *s)
{
    if (s == NULL || strnlen(s, RECORDER_TEXT_MAX + 1) > RECORDER_TEXT_MAX)
        abort();
}

static void on_process(void *ctx, const char *provider, const char *version, const char *binary,
                       int protocol, int pid)
{
    (void)protocol, (void)pid;
    text(provider);
    if (version != NULL)
        text(version);
    text(binary);
    ((struct seen *)ctx)->frames++;
}

static void on_begin(void *ctx, uint64_t call_id, const char *method, int64_t t_us)
{
    (void)call_id, (void)t_us;
    text(method);
    ((struct seen *)ctx)->frames++;
}

static void on_message(void *ctx, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                       uint8_t *bytes, size_t len)
{
    (void)call_id, (void)t_us;
    if ((dir != RECORDER_REQUEST && dir != RECORDER_RESPONSE) || len > MAX_MESSAGE || bytes == NULL)
        abort();
    /* Touch both ends, for ASan (a copy the compiler cannot drop). */
    if (len > 0) {
        uint8_t ends[2];
        memcpy(ends, bytes, 1);
        memcpy(ends + 1, bytes + len - 1, 1);
        ((struct seen *)ctx)->touched += ends[0] ^ ends[1];
    }
    free(bytes);
    ((struct seen *)ctx)->frames++;
}

static void on_end(void *ctx, uint64_t call_id, int64_t t_us, int status, const char *message)
{
    (void)call_id, (void)t_us, (void)status;
    text(message);
    ((struct seen *)ctx)->frames++;
}

static void on_lost(void *ctx, uint64_t n, enum recorder_lost why)
{
    if (why == RECORDER_LOST_MALFORMED)
        ((struct seen *)ctx)->lost += n;
    else
        ((struct seen *)ctx)->frames++; /* a LOST frame: its count is the tee's */
}

/* A spill file's name: a plain name, never a path. */
static void on_spilled(void *ctx, uint64_t call_id, enum recorder_direction dir, int64_t t_us,
                       const char *name)
{
    (void)call_id, (void)t_us;
    text(name);
    if ((dir != RECORDER_REQUEST && dir != RECORDER_RESPONSE) || name[0] == '\0' ||
        name[0] == '.' || strchr(name, '/') != NULL)
        abort();
    ((struct seen *)ctx)->frames++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz_recpipe", MFD_CLOEXEC);
        if (fd < 0)
            abort();
    }
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        abort();
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    struct seen seen = {0, 0, 0};
    recorder_pipe_sink sink = {&seen,   on_process, on_begin, on_message, on_end,
                               on_lost, NULL,       NULL,     on_spilled};
    int rc = recorder_pipe_read(fd, MAX_MESSAGE, &sink);
    /* Each frame, passed on or lost, took a whole header of the input. */
    if (seen.frames + seen.lost > size / sizeof(struct recorder_frame))
        abort();
    if ((rc != 0) != (seen.lost > 0) && rc != 0)
        abort();
    return 0;
}
