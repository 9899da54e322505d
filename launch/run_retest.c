/* tftap run, after `tofu test`: its run blocks, run again.
 *
 * Each run block of a test plans and applies in a state of its own, in
 * memory, and saves nothing: no document after the command names the
 * instances of count or for_each it made. The recording holds every answer
 * the test got: run again offline (tftap replay --no-record), with the same
 * arguments, `-json -verbose` added, core prints each run block's plan or
 * state (test_plan, test_state: `show -json` documents), and those become
 * documents of the matching, one group per run block (analysis_match_doc):
 * a call is named only when every instance it agrees with, in every run
 * block, has one address. The destroy at each test file's end is named by
 * that file's last state, as the state before it. Nothing is written of the
 * user's: the replay records nothing, and a -junit-xml file is not asked
 * for. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "launch/launch_int.h"
#include "store/store.h"

/* Is the test one whose run can be made again, the same? Its CLI's own
 * (no acceptance test's front: a replay's recording answers as its
 * providers did), no reattached providers (they would answer, not the
 * recording), an exit code of 0 or 1 (a test that failed still planned
 * what it planned), the configuration and the test files read with
 * certainty (no test file running another module), and no two calls that
 * asked the same answered differently in one process, applies included
 * (analysis_replay_repeatable_applies: of two processes, the replay's
 * claims hand each its own). */
static int retestable(const struct run_end *e, store *s)
{
    if (strcmp(e->sub, "test") != 0 || !e->is_cli || (e->code != 0 && e->code != 1) ||
        (e->aux_env != NULL && !e->replayed) || getenv("TF_REATTACH_PROVIDERS") != NULL)
        return 0;
    tftap_buf config = TFTAP_BUF_INIT;
    int plain = launch_config_doc(e->workdir, e->args, &config) == 0;
    tftap_buf_done(&config);
    int repeatable = 0;
    return plain && analysis_replay_repeatable_applies(s, e->run_id, &repeatable) == 0 &&
           repeatable;
}

/* The replay's output read: a document of each test_plan and test_state,
 * in the order printed, each with the test file it is of. */
struct printed {
    tftap_buf text;    /* the documents, one after the other */
    size_t *off, *len; /* each one's place in text */
    char **file;       /* its test file (owned) */
    int *state;        /* a test_state (else a test_plan) */
    size_t n, cap;
    int summary, errored; /* a test_summary seen; a run block or file in error */
    size_t ran;           /* run blocks that ran (passed or failed) */
};

static int printed_add(struct printed *p, const sj_node *doc, const sj_node *file, int state)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        size_t *off = realloc(p->off, cap * sizeof *off);
        if (off)
            p->off = off;
        size_t *len = realloc(p->len, cap * sizeof *len);
        if (len)
            p->len = len;
        char **f = realloc(p->file, cap * sizeof *f);
        if (f)
            p->file = f;
        int *st = realloc(p->state, cap * sizeof *st);
        if (st)
            p->state = st;
        if (!off || !len || !f || !st)
            return -1;
        p->cap = cap;
    }
    size_t at = p->text.len;
    sj_write(doc, &p->text);
    p->file[p->n] = strdup(file && file->kind == SJ_STRING ? file->str : "");
    if (tftap_buf_failed(&p->text) || !p->file[p->n])
        return -1;
    p->off[p->n] = at;
    p->len[p->n] = p->text.len - at;
    p->state[p->n] = state;
    p->n++;
    return 0;
}

static int str_is(const sj_node *n, const char *s)
{
    return n && n->kind == SJ_STRING && strcmp(n->str, s) == 0;
}

/* One line of `test -json` output: -1 when it is no JSON object (output
 * cut short: a run block's documents could be missing). */
static int read_line(struct printed *p, const char *line, size_t n)
{
    sj_doc *d = NULL;
    if (n == 0)
        return 0;
    if (sj_parse(line, n, TFTAP_JSON_MAX_DEPTH, &d) != 0)
        return -1;
    const sj_node *root = sj_root(d), *file = sj_get(root, "@testfile");
    const sj_node *plan = sj_get(root, "test_plan"), *state = sj_get(root, "test_state");
    const sj_node *run = sj_get(root, "test_run"), *tf = sj_get(root, "test_file");
    int rc = 0;
    if (plan && plan->kind == SJ_OBJECT)
        rc = printed_add(p, plan, file, 0);
    else if (state && state->kind == SJ_OBJECT)
        rc = printed_add(p, state, file, 1);
    if (str_is(sj_get(run, "status"), "error") || str_is(sj_get(tf, "status"), "error"))
        p->errored = 1;
    if (str_is(sj_get(run, "status"), "pass") || str_is(sj_get(run, "status"), "fail"))
        p->ran++;
    if (sj_get(root, "test_summary"))
        p->summary = 1;
    sj_free(d);
    return rc;
}

static void printed_done(struct printed *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->file[i]);
    free(p->file);
    free(p->off);
    free(p->len);
    free(p->state);
    tftap_buf_done(&p->text);
}

/* Most a test run again may print: every run block's plan or state. */
#define RETEST_MAX (256u << 20)

int run_retest(const struct run_end *e, store *s, struct run_retest *out)
{
    *out = (struct run_retest){0};
    if (!retestable(e, s))
        return -1;
    tftap_buf printed_out = TFTAP_BUF_INIT, runid = TFTAP_BUF_INIT;
    struct printed p = {.text = TFTAP_BUF_INIT};
    char *self = launch_self_exe();
    /* Where the replay's processes share their claims: a create asked the
     * same in two test files is given each its own answer. */
    char *claims = launch_tempdir("retest");
    char **argv = NULL;
    int rc = -1;
    size_t nargs = 0;
    while (e->args[nargs] != NULL)
        nargs++;
    tftap_buf_printf(&runid, "%lld", (long long)e->run_id);
    if (self == NULL || claims == NULL || tftap_buf_failed(&runid) ||
        (argv = calloc(nargs + 14, sizeof *argv)) == NULL)
        goto done;
    size_t n = run_replay_argv(e, self, runid.data, claims, argv);
    /* The test's arguments, in its -chdir directory; no -junit-xml file
     * (the user's, written again), and its output as JSON, verbose. */
    for (size_t i = 0; i < nargs; i++) {
        const char *a = e->args[i];
        const char *f = a[0] == '-' && a[1] == '-' ? a + 1 : a;
        if (strncmp(f, "-chdir=", 7) == 0 || strncmp(f, "-junit-xml=", 11) == 0)
            continue;
        if (strcmp(f, "-junit-xml") == 0) {
            i += e->args[i + 1] != NULL; /* its file too */
            continue;
        }
        argv[n++] = (char *)a;
    }
    argv[n++] = "-json";
    argv[n++] = "-verbose";
    argv[n] = NULL;
    int code = capture(argv, NULL, e->workdir, RETEST_MAX, &printed_out);
    int out_of_step = launch_claims_finish(claims);
    /* The same test gives the same outcome; a call the recording could
     * not answer is an error diagnostic of ours (and fails a run block);
     * output near the bound may have lost a piece (capture drops what
     * does not fit), and every line must be JSON, the summary there:
     * nothing is taken otherwise. Every run block's documents must be
     * there: a call whose own run block is missing could agree with
     * another's instance alone. A replay out of step with the recording
     * may have given one run block another's answers. */
    if (out_of_step || code != e->code || tftap_buf_failed(&printed_out) ||
        printed_out.len + 65536 > RETEST_MAX ||
        memmem(printed_out.data ? printed_out.data : "", printed_out.len, "tftap replay:", 13))
        goto done;
    for (size_t at = 0; at < printed_out.len;) {
        const char *line = printed_out.data + at;
        const char *nl = memchr(line, '\n', printed_out.len - at);
        size_t len = nl ? (size_t)(nl - line) : printed_out.len - at;
        if (read_line(&p, line, len) != 0)
            goto done;
        at += len + 1;
    }
    /* Each run block that ran printed its plan or state. */
    if (!p.summary || p.errored || p.n == 0 || p.ran != p.n)
        goto done;
    out->docs = calloc(3 * p.n, sizeof *out->docs);
    if (!out->docs)
        goto done;
    out->text = p.text;
    p.text = (tftap_buf)TFTAP_BUF_INIT;
    /* Each run block a group; then, for each test file, its last state
     * (no state of the file follows it) once more, as the state before
     * the destroy at its end. */
    int group = 0;
    for (size_t i = 0; i < p.n; i++) {
        out->docs[out->n++] =
            (analysis_match_doc){out->text.data + p.off[i], p.len[i], p.state[i], 0, NULL, ++group};
        /* The state it started from: the file's last state before it
         * (a plan changes none). */
        size_t j = i;
        while (j > 0 && !(p.state[j - 1] && strcmp(p.file[j - 1], p.file[i]) == 0))
            j--;
        if (j > 0)
            out->docs[out->n++] = (analysis_match_doc){
                out->text.data + p.off[j - 1], p.len[j - 1], 0, 0, NULL, group};
    }
    for (size_t i = 0; i < p.n; i++) {
        if (!p.state[i])
            continue;
        size_t j = i + 1;
        while (j < p.n && !(p.state[j] && strcmp(p.file[j], p.file[i]) == 0))
            j++;
        if (j == p.n)
            out->docs[out->n++] =
                (analysis_match_doc){out->text.data + p.off[i], p.len[i], 0, 0, NULL, ++group};
    }
    rc = 0;
done:
    if (rc != 0)
        run_retest_done(out);
    printed_done(&p);
    tftap_buf_done(&printed_out);
    tftap_buf_done(&runid);
    if (claims != NULL)
        launch_claims_finish(claims);
    free(claims);
    free(self);
    free(argv);
    return rc;
}

void run_retest_done(struct run_retest *r)
{
    free(r->docs);
    tftap_buf_done(&r->text);
    *r = (struct run_retest){0};
}
