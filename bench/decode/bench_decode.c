/* bench_decode: throughput of tftap's msgpack DynamicValue decoder.
 *
 *   bench_decode [-r REPEAT] FILE...
 *
 * Each FILE is a corpus of frames as written by bench/decode/go (`decodebench
 * gen`): 'm', u32 BE length + cty type JSON, u32 BE length + msgpack. Types
 * are parsed once, outside the timing (tftap parses a schema once per
 * provider); each timed pass decodes every payload to JSON into a reused
 * buffer. Prints per file
 *
 *   result tftap NAME BYTES PAYLOADS BEST_S MEDIAN_S
 *
 * with BYTES the msgpack input of one pass. bench/decode/run.sh turns these
 * into MB/s beside go-cty's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "decoder/decoder.h"

#define BENCH_MAX_FILE ((size_t)4 << 30)
#define BENCH_MAX_REPEAT 1000
#define BENCH_MAX_TYPES 64

struct item {
    const dec_type *type;
    const unsigned char *payload;
    size_t len;
};

/* The distinct types of one corpus (a few resource types). */
struct type_cache {
    size_t n;
    struct {
        const char *json;
        size_t len;
        dec_type *type;
    } e[BENCH_MAX_TYPES];
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static const dec_type *cache_type(struct type_cache *c, const char *json, size_t len,
                                  const char *path)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].len == len && memcmp(c->e[i].json, json, len) == 0)
            return c->e[i].type;
    if (c->n == BENCH_MAX_TYPES) {
        fprintf(stderr, "bench_decode: %s: more than %d distinct types\n", path, BENCH_MAX_TYPES);
        return NULL;
    }
    dec_type *t = NULL;
    dec_error err = DEC_ERROR_INIT;
    if (dec_type_parse(json, len, NULL, &t, &err) != 0) {
        tftap_buf msg = TFTAP_BUF_INIT;
        dec_error_format(&err, &msg);
        fprintf(stderr, "bench_decode: %s: type: %s\n", path, tftap_buf_cstr(&msg));
        tftap_buf_done(&msg);
        dec_error_done(&err);
        return NULL;
    }
    c->e[c->n].json = json;
    c->e[c->n].len = len;
    c->e[c->n].type = t;
    c->n++;
    return t;
}

/* Splits the corpus in data into items; 0 or -1 (reported on stderr). */
static int load(const char *path, const tftap_buf *data, struct type_cache *types,
                struct item **out, size_t *n_out)
{
    const unsigned char *p = (const unsigned char *)data->data, *end = p + data->len;
    struct item *items = NULL;
    size_t n = 0, cap = 0;
    while (p < end) {
        if (*p != 'm' || end - p < 5)
            goto bad;
        uint32_t tlen = be32(p + 1);
        if ((size_t)(end - p - 5) < (size_t)tlen + 4)
            goto bad;
        const char *tjson = (const char *)p + 5;
        uint32_t plen = be32(p + 5 + tlen);
        const unsigned char *payload = p + 9 + tlen;
        if ((size_t)(end - payload) < plen)
            goto bad;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            struct item *grown = realloc(items, cap * sizeof *items);
            if (!grown) {
                fprintf(stderr, "bench_decode: out of memory\n");
                goto fail;
            }
            items = grown;
        }
        if (!(items[n].type = cache_type(types, tjson, tlen, path)))
            goto fail;
        items[n].payload = payload;
        items[n].len = plen;
        n++;
        p = payload + plen;
    }
    *out = items;
    *n_out = n;
    return 0;
bad:
    fprintf(stderr, "bench_decode: %s: malformed frame at byte %zu\n", path,
            (size_t)(p - (const unsigned char *)data->data));
fail:
    free(items);
    return -1;
}

/* One pass over the corpus; 0, or -1 after reporting the failing payload. */
static int pass(const char *path, const struct item *items, size_t n, tftap_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        dec_error err = DEC_ERROR_INIT;
        tftap_buf_reset(out);
        if (dec_msgpack_to_json(items[i].type, items[i].payload, items[i].len, NULL, out, &err) !=
            0) {
            tftap_buf msg = TFTAP_BUF_INIT;
            dec_error_format(&err, &msg);
            fprintf(stderr, "bench_decode: %s: payload %zu: %s\n", path, i, tftap_buf_cstr(&msg));
            tftap_buf_done(&msg);
            dec_error_done(&err);
            return -1;
        }
    }
    return 0;
}

static int bench_file(const char *path, int repeat)
{
    tftap_buf data = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT;
    struct type_cache types = {0};
    struct item *items = NULL;
    size_t n = 0, total = 0;
    double *times = NULL;
    int rc = -1;

    if (tftap_read_file(path, BENCH_MAX_FILE, &data) != 0) {
        perror(path);
        goto cleanup;
    }
    if (load(path, &data, &types, &items, &n) != 0)
        goto cleanup;
    for (size_t i = 0; i < n; i++)
        total += items[i].len;
    if (!(times = calloc((size_t)repeat, sizeof *times)))
        goto cleanup;
    /* One untimed pass warms caches and grows the output buffer. */
    if (pass(path, items, n, &out) != 0)
        goto cleanup;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        if (pass(path, items, n, &out) != 0)
            goto cleanup;
        times[r] = now() - t0;
    }
    qsort(times, (size_t)repeat, sizeof *times, cmp_double);
    const char *name = strrchr(path, '/');
    printf("result tftap %s %zu %zu %.6f %.6f\n", name ? name + 1 : path, total, n, times[0],
           times[repeat / 2]);
    rc = 0;

cleanup:
    free(times);
    free(items);
    for (size_t i = 0; i < types.n; i++)
        dec_type_free(types.e[i].type);
    tftap_buf_done(&out);
    tftap_buf_done(&data);
    return rc;
}

int main(int argc, char **argv)
{
    int repeat = 5, i = 1;
    if (argc > 2 && strcmp(argv[1], "-r") == 0) {
        char *end;
        long r = strtol(argv[2], &end, 10);
        if (*end || r < 1 || r > BENCH_MAX_REPEAT) {
            fprintf(stderr, "bench_decode: -r wants 1..%d\n", BENCH_MAX_REPEAT);
            return 2;
        }
        repeat = (int)r;
        i = 3;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: bench_decode [-r REPEAT] FILE...\n");
        return 2;
    }
    for (; i < argc; i++)
        if (bench_file(argv[i], repeat) != 0)
            return 1;
    return 0;
}
