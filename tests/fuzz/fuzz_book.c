/* libFuzzer target: replay's book over JSON read from a database or a
 * bundle someone else made (so any JSON). An input is up to four texts
 * separated by NUL bytes: a recorded request, a replayed request, a
 * recorded response and the replayed request decoded without redaction.
 * Malformed JSON must be refused cleanly; a request must equal itself;
 * "differs" must agree with the count of differing paths; a filled
 * response must be JSON again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const rpcs[] = {"PlanResourceChange",    "ApplyResourceChange",  "ReadResource",
                                   "ReadDataSource",        "UpgradeResourceState", "CallFunction",
                                   "ValidateResourceConfig"};

static int stop(void *ctx, const char *path, const sj_node *a, const sj_node *b)
{
    (void)ctx, (void)path, (void)a, (void)b;
    return 1;
}

static int count(void *ctx, const char *path, const sj_node *a, const sj_node *b)
{
    tftap_buf t = TFTAP_BUF_INIT;
    /* What a mismatch text shows of each side. */
    if (a && sj_write_sorted(a, &t) != 0)
        abort();
    if (b && sj_write_sorted(b, &t) != 0)
        abort();
    if (!path || (!a && !b))
        abort();
    tftap_buf_done(&t);
    (*(size_t *)ctx)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *part[4] = {"", "", "", ""};
    size_t np = 0;
    const char *p = copy, *end = copy + size;
    while (np < 4 && p <= end) {
        part[np++] = p;
        p += strlen(p) + 1;
    }
    const char *const ignore[] = {".config.id*", "tags"};
    analysis_value_diff_opts o;
    replay_compare_opts(&o, ignore, (size & 16) ? 2 : 0);
    sj_doc *rec = NULL, *now = NULL;
    if (sj_parse(part[0], strlen(part[0]), 0, &rec) == 0 &&
        sj_parse(part[1], strlen(part[1]), 0, &now) == 0) {
        size_t self = 0, n = 0;
        if (replay_compare_requests(&o, sj_root(rec), sj_root(rec), count, &self) == 0 && self)
            abort();
        int rc = replay_compare_requests(&o, sj_root(rec), sj_root(now), count, &n);
        int differs = replay_compare_requests(&o, sj_root(rec), sj_root(now), stop, NULL);
        if (rc == 0 && (differs == 1) != (n > 0))
            abort();
    }
    sj_free(rec);
    sj_free(now);
    tftap_buf out = TFTAP_BUF_INIT;
    size_t filled = 0;
    const char *rpc = rpcs[size % (sizeof rpcs / sizeof rpcs[0])];
    if (replay_fill_json(rpc, part[2], part[3], strlen(part[3]), &out, &filled) == 0 && filled) {
        sj_doc *d = NULL;
        if (sj_parse(out.data, out.len, 0, &d) != 0)
            abort();
        sj_free(d);
    } else if (out.len) {
        abort();
    }
    tftap_buf_done(&out);
    free(copy);
    return 0;
}
