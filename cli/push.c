/* tftap push RUN|all --to URL: runs of a local database or a bundle copied
 * into a shared record (docs/database.md, "Pushing runs into it"). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"

static const char usage_text[] =
    "usage: tftap push RUN... --to URL [--db PATH] [--json]\n"
    "       tftap push all --to URL [--db PATH] [--json]\n\n"
    "Copy runs into the record at URL (a postgresql:// URI, or another database file):\n"
    "each run with its provider processes, calls, raw messages, gaps and schemas, in\n"
    "one transaction per run, so an interrupted push leaves no half run behind and is\n"
    "simply run again. A run is known by its uuid: one the record has already is left\n"
    "alone, so pushing twice adds nothing. Ids are the record's own.\n"
    "RUN is a run id or 'last' of the database, a bundle or database file (its last\n"
    "run), or FILE:RUN; 'all' is every run of the database but those still recording\n"
    "(no end time; name one to push it as it is). Values are copied as stored:\n"
    "$sensitive hashes keep the key they were made with (runs.key_id names it).\n"
    "A run recorded with --record-sensitive holds secrets in clear: it is refused\n"
    "unless --allow-secrets is given; so is a run of a spool (a run meant for a\n"
    "PostgreSQL record, held back until its end) that its end did not redact.\n"
    "Prints a line per run and a summary; progress on stderr when it is a terminal.\n"
    "Exit 0 when every run is there, 1 when one could not be pushed, 2 on a usage\n"
    "error or a record that cannot be opened.\n\n"
    "  --to URL            the record to push into (required)\n"
    "  --json              one JSON object: the runs and the totals\n"
    "  --allow-secrets     push runs recorded with --record-sensitive as they are\n"
    "  --db PATH           the database RUN and 'all' read (default $TFTAP_DB or\n"
    "                      .tftap/tftap.db)\n";

struct progress {
    int tty;
    int64_t last_ms;
    int64_t run;  /* the source run */
    int index, n; /* which of how many */
    int shown;    /* a line is on the terminal */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* At most ten updates a second, one line rewritten in place. */
static void on_progress(void *ctx, int64_t done, int64_t total)
{
    struct progress *p = ctx;
    int64_t t = now_ms();
    if (done != 0 && done != total && t - p->last_ms < 100)
        return;
    p->last_ms = t;
    fprintf(stderr, "\r\033[Kpushing run %lld (%d/%d): %lld/%lld calls", (long long)p->run,
            p->index, p->n, (long long)done, (long long)total);
    fflush(stderr);
    p->shown = 1;
}

static void progress_clear(struct progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->shown = 0;
    }
}

/* What is pushed: runs of one store. */
struct source {
    store *s;
    const char *path;
    char *owned;
    int64_t *runs;
    size_t n;
};

static int add_run(struct source *src, int64_t id)
{
    int64_t *nr = realloc(src->runs, (src->n + 1) * sizeof *nr);
    if (!nr)
        return -1;
    src->runs = nr;
    src->runs[src->n++] = id;
    return 0;
}

struct all_ctx {
    struct source *src;
    int64_t open_runs;
    int failed;
};

static int each_run(void *ctx, const store_run_row *r)
{
    struct all_ctx *a = ctx;
    if (r->ended_us == 0) {
        fprintf(stderr,
                "tftap: run %lld is still recording (no end time): skipped (name it to push it "
                "as it is)\n",
                (long long)r->id);
        a->open_runs++;
        return 0;
    }
    if (add_run(a->src, r->id)) {
        a->failed = 1;
        return 1;
    }
    return 0;
}

struct totals {
    int64_t pushed, calls, already, skipped, failed, foreign;
    tftap_buf json;
    int nj;
};

/* "C at paths core marked, K equal to a known secret" of a run's
 * runs.redactions, or "" when it has none. */
static void redaction_words(const char *counts, tftap_buf *out)
{
    sj_doc *d = NULL;
    if (!counts || !*counts || sj_parse(counts, strlen(counts), 4, &d) != 0)
        return;
    const sj_node *m = sj_get(sj_root(d), "core_mark"), *k = sj_get(sj_root(d), "known_secret"),
                  *a = sj_get(sj_root(d), "arguments");
    tftap_buf_printf(out,
                     "; redacted at its end: %s where core marked them, %s equal to one, %s in "
                     "its arguments",
                     m && m->kind == SJ_NUMBER ? m->str : "0",
                     k && k->kind == SJ_NUMBER ? k->str : "0",
                     a && a->kind == SJ_NUMBER ? a->str : "0");
    sj_free(d);
}

static void report(struct totals *t, int text, const char *from, int64_t run, int err,
                   const store_push_info *info, const char *to, const char *counts)
{
    if (!err && info->already) {
        t->already++;
        if (text)
            printf("run %lld of %s: already there as run %lld (%s)\n", (long long)run, from,
                   (long long)info->dst_run_id, info->uuid);
    } else if (!err) {
        t->pushed++;
        t->calls += info->calls;
        t->foreign += info->foreign_key;
        if (text) {
            tftap_buf w = TFTAP_BUF_INIT;
            redaction_words(counts, &w);
            printf("run %lld of %s: pushed as run %lld (%s): %lld calls, %lld processes, "
                   "%lld gaps, %lld raw messages%s\n",
                   (long long)run, from, (long long)info->dst_run_id, info->uuid,
                   (long long)info->calls, (long long)info->processes, (long long)info->gaps,
                   (long long)info->messages, w.len ? tftap_buf_cstr(&w) : "");
            tftap_buf_done(&w);
        }
    } else {
        t->failed++;
        cli_error("cannot push run %lld of %s into %s: %s%s%s", (long long)run, from, to,
                  tftap_strerror(err), info->why[0] ? ": " : "", info->why);
    }
    tftap_buf *j = &t->json;
    tftap_buf_puts(j, t->nj++ ? "," : "");
    tftap_buf_puts(j, "{\"source\":");
    cli_json_str(j, from);
    tftap_buf_printf(j, ",\"run\":%lld,\"status\":\"%s\"", (long long)run,
                     err             ? "failed"
                     : info->already ? "already"
                                     : "pushed");
    if (!err) {
        tftap_buf_puts(j, ",\"uuid\":");
        cli_json_str(j, info->uuid);
        tftap_buf_printf(j,
                         ",\"to_run\":%lld,\"calls\":%lld,\"processes\":%lld,\"gaps\":%lld,"
                         "\"messages\":%lld,\"schemas\":%lld,\"own_key\":%s",
                         (long long)info->dst_run_id, (long long)info->calls,
                         (long long)info->processes, (long long)info->gaps,
                         (long long)info->messages, (long long)info->schemas,
                         info->foreign_key ? "true" : "false");
        tftap_buf_puts(j, ",\"redactions\":");
        tftap_buf_puts(j, counts && *counts ? counts : "null");
    } else {
        tftap_buf_puts(j, ",\"error\":");
        cli_json_str(j, info->why[0] ? info->why : tftap_strerror(err));
    }
    tftap_buf_putc(j, '}');
}

static int open_sources(const char *db, char **operands, int n, struct source **out, size_t *nout,
                        int64_t *open_runs)
{
    struct source *srcs = calloc((size_t)n, sizeof *srcs);
    if (!srcs) {
        cli_error("out of memory");
        return 1;
    }
    *out = srcs;
    *nout = 0;
    for (int i = 0; i < n; i++) {
        struct source *src = &srcs[(*nout)++];
        if (strcmp(operands[i], "all") == 0) {
            src->path = db;
            if (cli_open_store(db, &src->s))
                return 1;
            struct all_ctx a = {src, 0, 0};
            int rc = store_runs_each(src->s, each_run, &a);
            if (rc || a.failed) {
                cli_error("reading %s: %s", STORE_SHOWN(db),
                          a.failed ? "out of memory" : store_errmsg(src->s));
                return 1;
            }
            *open_runs += a.open_runs;
            continue;
        }
        int64_t run = 0;
        int rc = cli_open_run(db, operands[i], &src->s, &src->path, &run, &src->owned);
        if (rc)
            return rc;
        if (add_run(src, run)) {
            cli_error("out of memory");
            return 1;
        }
    }
    return 0;
}

static int open_target(const char *to, store **out)
{
    errno = 0;
    int rc = store_open(to, STORE_OPEN_CREATE, out);
    if (rc == 0)
        return 0;
    if (rc == TFTAP_ENOLIB)
        cli_error("%s", store_open_error());
    else if (rc == TFTAP_EIO && store_path_is_url(to) && *store_open_error())
        cli_error("cannot open %s: %s", STORE_SHOWN(to), store_open_error());
    else if (rc == TFTAP_EIO)
        cli_error("cannot open %s: %s", STORE_SHOWN(to), strerror(errno ? errno : EIO));
    else if (rc == TFTAP_ESTORE)
        cli_error("cannot write into %s: not a tftap database, a bundle, or one from a newer "
                  "tftap",
                  STORE_SHOWN(to));
    else
        cli_error("cannot open %s: %s", STORE_SHOWN(to), tftap_strerror(rc));
    return 2;
}

/* tftap push with its options read: operands[0..n) the RUNs (or all). */
static int push_runs(const char *cmd, const char *db, const char *to, int json, int allow_secrets,
                     char **operands, int n)
{
    if (n < 1) {
        cli_usage_error(cmd, "push needs RUN (a run id, 'last', a FILE, FILE:RUN) or 'all'");
        return 2;
    }
    if (!to || !*to) {
        cli_usage_error(cmd, "push needs --to URL (the record to push into)");
        return 2;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(operands[i], "all") == 0 && n > 1) {
            cli_usage_error(cmd, "'all' is every run: name no other RUN with it");
            return 2;
        }
    char shown_to[512];
    const char *to_name = store_display_name(to, shown_to, sizeof shown_to);
    const char *dbp = launch_db_path(db);
    struct source *srcs = NULL;
    size_t nsrc = 0;
    int64_t open_runs = 0;
    store *dst = NULL;
    struct totals t = {0, 0, 0, 0, 0, 0, TFTAP_BUF_INIT, 0};
    int rc = open_sources(dbp, operands, n, &srcs, &nsrc, &open_runs);
    if (rc)
        goto done;
    t.skipped = open_runs;
    if ((rc = open_target(to, &dst)) != 0)
        goto done;
    int total = 0, index = 0;
    for (size_t i = 0; i < nsrc; i++)
        total += (int)srcs[i].n;
    struct progress p = {isatty(STDERR_FILENO), 0, 0, 0, total, 0};
    for (size_t i = 0; i < nsrc; i++) {
        char shown_from[512];
        const char *from = store_display_name(srcs[i].path, shown_from, sizeof shown_from);
        for (size_t k = 0; k < srcs[i].n; k++) {
            store_push_info info;
            p.run = srcs[i].runs[k];
            p.index = ++index;
            p.last_ms = 0;
            int kept = 0, err = 0;
            tftap_buf counts = TFTAP_BUF_INIT;
            memset(&info, 0, sizeof info);
            (void)store_run_redactions(srcs[i].s, srcs[i].runs[k], &counts);
            if (store_run_values_kept(srcs[i].s, srcs[i].runs[k], &kept) == 0 && kept &&
                !allow_secrets) {
                /* Never in clear into a shared record without a word. */
                err = TFTAP_EINVAL;
                snprintf(info.why, sizeof info.why, "%s",
                         kept == 2 ? "it is held back in a spool and was not redacted (its "
                                     "tftap run did not end): it may hold secrets in clear; "
                                     "the next tftap run into the record redacts and copies "
                                     "it (--allow-secrets pushes it as it is)"
                                   : "it was recorded with --record-sensitive and holds "
                                     "secrets in clear (--allow-secrets pushes it as it is)");
            } else {
                err = store_push_run(srcs[i].s, srcs[i].runs[k], dst, p.tty ? on_progress : NULL,
                                     &p, &info);
            }
            progress_clear(&p);
            report(&t, !json, from, srcs[i].runs[k], err, &info, to_name, tftap_buf_cstr(&counts));
            tftap_buf_done(&counts);
            fflush(stdout);
            if (err == TFTAP_EIO) {
                /* The connection is gone: the next runs would say the same. */
                cli_error("stopping: %s is not reachable", to_name);
                goto summary;
            }
        }
    }
summary:
    if (json) {
        tftap_buf out = TFTAP_BUF_INIT;
        tftap_buf_puts(&out, "{\"to\":");
        cli_json_str(&out, to_name);
        tftap_buf_puts(&out, ",\"runs\":[");
        tftap_buf_append(&out, t.json.data, t.json.len);
        tftap_buf_printf(&out,
                         "],\"pushed\":%lld,\"calls\":%lld,\"already\":%lld,"
                         "\"skipped_recording\":%lld,\"failed\":%lld,\"own_key\":%lld}\n",
                         (long long)t.pushed, (long long)t.calls, (long long)t.already,
                         (long long)t.skipped, (long long)t.failed, (long long)t.foreign);
        if (cli_flush(&out))
            t.failed++;
        tftap_buf_done(&out);
    } else {
        if (t.foreign)
            printf("%lld pushed run%s keep%s the redaction key %s recorded with "
                   "(runs.key_id): $sensitive hashes compare only with runs of that key\n",
                   (long long)t.foreign, t.foreign == 1 ? "" : "s", t.foreign == 1 ? "s" : "",
                   t.foreign == 1 ? "it was" : "they were");
        printf("pushed %lld run%s (%lld calls), %lld already there", (long long)t.pushed,
               t.pushed == 1 ? "" : "s", (long long)t.calls, (long long)t.already);
        if (t.skipped)
            printf(", %lld still recording skipped", (long long)t.skipped);
        if (t.failed)
            printf(", %lld failed", (long long)t.failed);
        printf("\n");
        if (fflush(stdout) != 0) {
            cli_error("writing the summary: %s", strerror(errno));
            t.failed++;
        }
    }
    rc = t.failed ? 1 : 0;
done:
    store_close(dst);
    for (size_t i = 0; i < nsrc; i++) {
        store_close(srcs[i].s);
        free(srcs[i].owned);
        free(srcs[i].runs);
    }
    free(srcs);
    tftap_buf_done(&t.json);
    return rc;
}

int cli_push(int argc, char **argv)
{
    const char *db = NULL, *to = NULL;
    int json = 0, allow_secrets = 0, help = 0, npos = 0;
    const struct cli_opt opts[] = {
        {"--to", &to, NULL, 0}, {"--allow-secrets", NULL, &allow_secrets, 0}, {0}};
    /* RUN operands, as many as given. */
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    if (pos == NULL) {
        cli_error("out of memory");
        return 2;
    }
    if (cli_store_args(argc, argv, opts, &db, &json, &help, pos, argc, &npos) != 0) {
        free(pos);
        return 2;
    }
    if (help) {
        fputs(usage_text, stdout);
        free(pos);
        return 0;
    }
    int code = push_runs(argv[0], db, to, json, allow_secrets, (char **)pos, npos);
    free(pos);
    return code;
}
