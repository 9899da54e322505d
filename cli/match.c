/* tftap match: a recorded run's calls tied to resource addresses on demand,
 * from documents the CLI wrote, for runs whose end tftap did not see (a
 * command run under tftap wrap, tftap run --no-match). The same matching
 * as at the end of tftap run (analysis_match_addresses). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "cli/cli_store.h"
#include "launch/launch.h"

static const char usage_text[] =
    "usage: tftap match RUN [--plan FILE] [--state FILE] [--before FILE] [--config DIR]\n"
    "                   [--db PATH]\n\n"
    "Tie the calls of a recorded run to resource addresses, as tftap run does at the\n"
    "end of a run, from what the CLI itself says: for a run whose end tftap did not\n"
    "see (a command run under tftap wrap), or that was recorded with --no-match.\n"
    "What it set before is replaced. Give what you have; each helps:\n\n"
    "  --plan FILE     'tofu show -json PLANFILE' of the plan the run saved or applied\n"
    "  --state FILE    'tofu show -json' after the run: the state it left\n"
    "  --before FILE   the state the run started from ('tofu show -json' or 'tofu\n"
    "                  state pull' before it)\n"
    "  --config DIR    the configuration (its resource blocks name what one block makes\n"
    "                  certain; default: the run's working directory, when it is there)\n"
    "  --db PATH       the database (default $TFTAP_DB, else .tftap/tftap.db)\n"
    "  --json          {\"run\", \"named\", \"calls\", \"ended\"}\n\n"
    "Prints how many of the run's resource calls it named, and says so when the run\n"
    "has no end in the record yet (its recorders may still be writing calls, which\n"
    "then stay unnamed: match again once it has ended). Exit 0; 1 on an error\n"
    "(a document that is not JSON, a bundle, which is read only); 2 on a usage error.\n";

struct cwd_read {
    char *cwd;
    int exit_ok;
    int ended;   /* its end is in the record: nothing more is recorded into it */
    int refresh; /* `refresh`, or `-refresh-only`: it applied nothing it planned */
};

/* Was the command (its words, a JSON array) a refresh? */
static int refresh_words(const char *args_json)
{
    sj_doc *doc = NULL;
    int refresh = 0, sub_seen = 0;
    if (args_json && sj_parse(args_json, strlen(args_json), 4, &doc) == 0) {
        for (const sj_node *a = sj_root(doc)->child; a; a = a->next) {
            if (a->kind != SJ_STRING)
                continue;
            if (!sub_seen && a->str[0] != '-') {
                sub_seen = 1;
                refresh |= strcmp(a->str, "refresh") == 0;
            } else if (sub_seen) {
                refresh |= strcmp(a->str, "-refresh-only") == 0 ||
                           strcmp(a->str, "--refresh-only") == 0 ||
                           strcmp(a->str, "-refresh-only=true") == 0;
            }
        }
    }
    sj_free(doc);
    return refresh;
}

static int run_row(void *ctx, const store_run_row *r)
{
    struct cwd_read *c = ctx;
    c->cwd = r->cwd ? strdup(r->cwd) : NULL;
    c->exit_ok = r->has_exit_code && r->exit_code == 0;
    c->ended = r->ended_us != 0;
    c->refresh = refresh_words(r->args_json);
    return 0;
}

static int read_doc(const char *path, tftap_buf *b)
{
    if (tftap_read_file(path, LAUNCH_DOC_MAX, b) != 0) {
        cli_error("cannot read %s: %s", path, strerror(errno ? errno : EIO));
        return 1;
    }
    return 0;
}

int cli_match(int argc, char **argv)
{
    const char *plan = NULL, *state = NULL, *before = NULL, *config_dir = NULL;
    const struct cli_opt opts[] = {{"--plan", &plan, NULL, 0},
                                   {"--state", &state, NULL, 0},
                                   {"--before", &before, NULL, 0},
                                   {"--config", &config_dir, NULL, 0},
                                   {0}};
    struct cli_read r;
    int rc = cli_read_parse(argc, argv, opts, usage_text, 1, 1, &r);
    if (rc != CLI_READ_GO)
        return rc;
    if (!plan && !state && !before && !config_dir) {
        cli_usage_error(argv[0], "give the documents to match with: --plan, --state, --before "
                                 "or --config");
        return 2;
    }
    const char *path = r.path;
    if (!store_path_is_url(path) && store_file_is_bundle(path) == 1) {
        cli_error("%s is a bundle, which is read only", STORE_SHOWN(path));
        return 1;
    }
    tftap_buf bb = TFTAP_BUF_INIT, pb = TFTAP_BUF_INIT, sb = TFTAP_BUF_INIT, cb = TFTAP_BUF_INIT;
    analysis_match_doc docs[4];
    size_t ndocs = 0;
    store *s = NULL;
    struct cwd_read cr = {NULL, 0, 0, 0};
    int code = 1;
    if ((before && read_doc(before, &bb)) || (plan && read_doc(plan, &pb)) ||
        (state && read_doc(state, &sb)))
        goto done;
    errno = 0;
    rc = store_open(path, 0, &s);
    if (rc) {
        cli_store_open_failed(path, 0, rc);
        goto done;
    }
    int64_t run = 0;
    if ((code = cli_resolve_run(s, path, r.pos[0], &run)) != 0)
        goto done;
    code = 1;
    if (store_run_get(s, run, run_row, &cr) != 0) {
        cli_error("reading %s: %s", STORE_SHOWN(path), store_errmsg(s));
        goto done;
    }
    if (before)
        docs[ndocs++] = (analysis_match_doc){bb.data ? bb.data : "", bb.len, 0, 0, NULL, 0};
    if (plan)
        docs[ndocs++] = (analysis_match_doc){pb.data ? pb.data : "", pb.len, 0, 0, NULL, 0};
    /* Without an exit code of 0 (under wrap none is known) the state
     * after may not hold what the run planned: hints only; nor after a
     * refresh (analysis_match_doc's partial). */
    if (state)
        docs[ndocs++] = (analysis_match_doc){sb.data ? sb.data : "",       sb.len, 1,
                                             cr.refresh ? 2 : !cr.exit_ok, NULL,   0};
    const char *dir = config_dir ? config_dir : cr.cwd;
    struct stat st;
    if (dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && launch_config_doc(dir, NULL, &cb) == 0)
        docs[ndocs++] = (analysis_match_doc){cb.data, cb.len, 0, 0, NULL, 0};
    else if (config_dir)
        cli_error("the configuration in %s cannot be read with certainty: nothing is named "
                  "from it",
                  config_dir);
    analysis_addresses a;
    rc = analysis_match_addresses(s, run, docs, ndocs, "no document was given to match it", &a);
    if (rc == 0)
        rc = store_set_addresses(s, a.v, a.n);
    int named = a.matched, unnamed = a.unmatched;
    analysis_addresses_done(&a);
    if (rc == TFTAP_EDECODE) {
        cli_error("a document is not JSON (give what 'tofu show -json' prints)");
        goto done;
    }
    if (rc) {
        cli_error("matching calls to addresses failed: %s", store_errmsg(s));
        goto done;
    }
    /* Under tftap wrap a run ends when its last recorder is done: before,
     * a count of what is there would read as the whole run's. */
    if (!cr.ended)
        cli_error("run %lld has no end in the record yet: its recorders may still be writing "
                  "calls, which stay unnamed (or its recording was cut short); match again once "
                  "'tftap runs' shows it ended",
                  (long long)run);
    if (r.json)
        printf("{\"run\":%lld,\"named\":%d,\"calls\":%d,\"ended\":%s}\n", (long long)run, named,
               named + unnamed, cr.ended ? "true" : "false");
    else
        printf("run %lld: %d of %d resource calls named (tftap show %lld says why the others "
               "are not)%s\n",
               (long long)run, named, named + unnamed, (long long)run,
               cr.ended ? "" : "; the run has not ended: more calls may come");
    code = fflush(stdout) == 0 ? 0 : 1;
done:
    free(cr.cwd);
    store_close(s);
    tftap_buf_done(&bb);
    tftap_buf_done(&pb);
    tftap_buf_done(&sb);
    tftap_buf_done(&cb);
    cli_read_done(&r);
    return code;
}
