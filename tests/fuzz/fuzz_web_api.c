/* libFuzzer target: tftap serve's API routing and argument parsing (the
 * part of a request URL that reaches our code; HTTP itself is
 * libmicrohttpd's). An input is a path, then optionally a newline and a
 * query string "k=v&k=v" (already URL-decoded, as libmicrohttpd hands them
 * over). It runs against a small real database opened read only, as the
 * server opens it. Every answer must be one of the statuses the API
 * documents, with a JSON body. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "web/web_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static store *db;
static struct web_schema_cache cache;
static struct web_verdict_cache verdicts;
static char dir[256], path[300];

static void cleanup(void)
{
    store_close(db);
    free(cache.json);
    for (int i = 0; i < WEB_VERDICTS; i++) {
        free(verdicts.e[i].json);
        free(verdicts.e[i].gaps);
        free(verdicts.e[i].ids);
    }
    char f[320];
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
}

static int setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tftap-fuzz-web.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/t.db", dir);
    store *w = NULL;
    int64_t run = 0;
    const char *args[] = {"plan"};
    if (store_open(path, STORE_OPEN_CREATE, &w) ||
        store_run_begin(w, "tofu", 1, args, "/", "tofu", "1.10.0", &run) ||
        store_run_end(w, run, 0))
        return -1;
    store_close(w);
    if (store_open(path, STORE_OPEN_READONLY, &db) || uv_mutex_init(&cache.lock) ||
        uv_mutex_init(&verdicts.lock))
        return -1;
    atexit(cleanup);
    return 0;
}

struct args {
    char *k[16], *v[16];
    int n;
};

static const char *get_arg(void *ctx, const char *name)
{
    struct args *a = ctx;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->k[i], name) == 0)
            return a->v[i];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db && setup() != 0)
        abort();
    if (size > 4096)
        return 0;
    char *copy = malloc(size + 2);
    if (!copy)
        return 0;
    copy[0] = '/';
    memcpy(copy + 1, data, size);
    copy[size + 1] = '\0';
    char *p = copy[1] == '/' ? copy + 1 : copy;
    struct args a = {.n = 0};
    char *nl = strchr(p, '\n');
    if (nl) {
        *nl = '\0';
        for (char *kv = nl + 1; kv && a.n < 16;) {
            char *amp = strchr(kv, '&');
            if (amp)
                *amp = '\0';
            char *eq = strchr(kv, '=');
            if (eq)
                *eq = '\0';
            a.k[a.n] = kv;
            a.v[a.n++] = eq ? eq + 1 : "";
            kv = amp ? amp + 1 : NULL;
        }
    }
    struct web_request r = {p, get_arg, &a, &verdicts, (uint64_t)size % 3, NULL};
    tftap_buf body = TFTAP_BUF_INIT;
    int status = web_api(db, &cache, &r, &body);
    if (status != 200 && status != 400 && status != 404 && status != 500)
        abort();
    if (!tftap_buf_failed(&body) && (body.len == 0 || body.data[0] != '{'))
        abort();
    tftap_buf_done(&body);
    free(copy);
    return 0;
}
