/* tftap prune: old runs removed from the record, with everything hanging
 * off them, never one still being recorded (store/prune.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_store.h"

static const char usage_text[] =
    "usage: tftap prune (--older-than DURATION | --keep N) [--dry-run] [--db PATH] [--json]\n\n"
    "Remove runs from the record (a database file or a postgresql:// URI) with their\n"
    "provider processes, calls, addresses, raw messages, gaps and secret hashes, one\n"
    "transaction per run, oldest first, and give the space back. A run still being\n"
    "recorded (by tftap run, a wrapped command's shims, their recorders, or the\n"
    "finisher of a run whose database was away) is never touched: it is listed as\n"
    "left. A run that never ended and that nobody records any more (killed) is\n"
    "removed like any other. The step runs of a test suite's run go with it.\n"
    "Schemas no remaining process names go too, unless some run is being recorded.\n"
    "Space: a database file's freed pages are given back to the file system\n"
    "(incremental vacuum; a file made by an older tftap is rewritten once by VACUUM,\n"
    "only when nothing records into it); on PostgreSQL, VACUUM makes the space\n"
    "reusable. Asks nothing; prints each run it removed and what that freed.\n\n"
    "  --older-than DURATION  runs that started more than DURATION ago: a number and\n"
    "                         its unit, s, m, h, d or w, or several (1h30m, 7d, 2w)\n"
    "  --keep N               all but the newest N runs (with --older-than: the runs\n"
    "                         both select)\n"
    "  --dry-run              say what would be removed, remove nothing\n"
    "  --json                 one JSON object: the runs removed, those left, totals\n"
    "  --db PATH              the record (default $TFTAP_DB, else .tftap/tftap.db)\n\n"
    "Exit 0 when done (also when nothing was old enough), 1 on an error, 2 on a\n"
    "usage error.\n";

struct prune_ctx {
    tftap_buf out;
    int json, dry_run;
    size_t n, left;
};

static int each_run(void *ctx, const store_prune_run *r)
{
    struct prune_ctx *c = ctx;
    tftap_buf *b = &c->out;
    if (c->json) {
        tftap_buf_puts(b, c->n + c->left ? ",\n    " : "\n    ");
        tftap_buf_printf(b, "{\"id\":%lld,\"status\":\"%s\",\"command\":", (long long)r->id,
                         r->recording ? "recording"
                         : c->dry_run ? "would_remove"
                                      : "removed");
        cli_json_str(b, r->command);
        tftap_buf_puts(b, ",\"args\":");
        cli_json_raw(b, r->args_json);
        tftap_buf_puts(b, ",\"cwd\":");
        cli_json_str(b, r->cwd);
        tftap_buf_printf(b, ",\"started_us\":%lld,\"ended_us\":", (long long)r->started_us);
        if (r->ended_us)
            tftap_buf_printf(b, "%lld", (long long)r->ended_us);
        else
            tftap_buf_puts(b, "null");
        tftap_buf_printf(b, ",\"processes\":%lld,\"calls\":%lld}", (long long)r->processes,
                         (long long)r->calls);
    } else {
        char when[32];
        cli_format_time(r->started_us, when);
        if (r->recording)
            tftap_buf_printf(b, "left run %lld (%s): still being recorded\n", (long long)r->id,
                             when);
        else {
            tftap_buf_printf(b, "%s run %lld  %s  %s", c->dry_run ? "would remove" : "removed",
                             (long long)r->id, when, r->command && *r->command ? r->command : "-");
            cli_args_text(b, r->args_json);
            tftap_buf_printf(b, "  (%lld call%s%s)\n", (long long)r->calls,
                             r->calls == 1 ? "" : "s", r->ended_us ? "" : "; never ended");
        }
    }
    if (r->recording)
        c->left++;
    else
        c->n++;
    return c->json ? 0 : (cli_flush(b) ? TFTAP_EIO : 0);
}

/* "1.2 MiB" */
static void size_text(tftap_buf *b, int64_t n)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)(n < 0 ? -n : n);
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof unit / sizeof *unit) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        tftap_buf_printf(b, "%s%lld bytes", n < 0 ? "-" : "", (long long)(n < 0 ? -n : n));
    else
        tftap_buf_printf(b, "%s%.1f %s", n < 0 ? "-" : "", v, unit[u]);
}

static const char *reclaim_name(enum store_reclaim r)
{
    switch (r) {
    case STORE_RECLAIM_INCREMENTAL:
        return "incremental";
    case STORE_RECLAIM_VACUUM:
        return "vacuum";
    case STORE_RECLAIM_DEFERRED:
        return "deferred";
    case STORE_RECLAIM_PG_VACUUM:
        return "postgresql_vacuum";
    case STORE_RECLAIM_FAILED:
        return "failed";
    default:
        return "none";
    }
}

static void summary_text(tftap_buf *b, const char *path, const store_prune_opts *o,
                         const store_prune_info *in)
{
    const char *shown = STORE_SHOWN(path);
    if (in->runs == 0) {
        tftap_buf_printf(b, "nothing to %s in %s", o->dry_run ? "remove" : "prune", shown);
        if (in->recording)
            tftap_buf_printf(b, ": the %lld run%s selected %s still being recorded",
                             (long long)in->recording, in->recording == 1 ? "" : "s",
                             in->recording == 1 ? "is" : "are");
        tftap_buf_putc(b, '\n');
        return;
    }
    tftap_buf_printf(b,
                     "%s %lld run%s: %lld provider process%s, %lld call%s, %lld raw message%s, "
                     "%lld gap row%s",
                     o->dry_run ? "would remove" : "removed", (long long)in->runs,
                     in->runs == 1 ? "" : "s", (long long)in->processes,
                     in->processes == 1 ? "" : "es", (long long)in->calls,
                     in->calls == 1 ? "" : "s", (long long)in->messages,
                     in->messages == 1 ? "" : "s", (long long)in->gaps, in->gaps == 1 ? "" : "s");
    if (in->schemas)
        tftap_buf_printf(b, ", %lld schema%s no run uses any more", (long long)in->schemas,
                         in->schemas == 1 ? "" : "s");
    if (in->recording)
        tftap_buf_printf(b, "; left %lld still being recorded", (long long)in->recording);
    tftap_buf_putc(b, '\n');
    if (o->dry_run)
        return;
    if (in->schemas_kept)
        tftap_buf_puts(b, "schemas no run uses are kept while runs are being recorded (prune "
                          "again later)\n");
    tftap_buf_printf(b, "space: %s ", shown);
    size_text(b, in->bytes_before);
    tftap_buf_puts(b, " -> ");
    size_text(b, in->bytes_after);
    switch (in->reclaim) {
    case STORE_RECLAIM_INCREMENTAL:
    case STORE_RECLAIM_VACUUM:
        tftap_buf_puts(b, " (");
        size_text(b, in->bytes_before - in->bytes_after);
        tftap_buf_printf(b, " freed; %s)\n",
                         in->reclaim == STORE_RECLAIM_VACUUM
                             ? "VACUUM rewrote the file, which gives space back incrementally "
                               "from now on"
                             : "incremental vacuum");
        break;
    case STORE_RECLAIM_DEFERRED:
        tftap_buf_puts(b, " (the freed pages are reused for new runs; the file shrinks when "
                          "prune runs while nothing records into it: it needs one VACUUM)\n");
        break;
    case STORE_RECLAIM_PG_VACUUM:
        tftap_buf_puts(b, " (VACUUM ran: PostgreSQL reuses the space for new rows; its files "
                          "shrink only by VACUUM FULL)\n");
        break;
    case STORE_RECLAIM_FAILED:
        tftap_buf_printf(b, " (space not reclaimed: %s)\n", in->why);
        break;
    default:
        tftap_buf_putc(b, '\n');
    }
}

int cli_prune(int argc, char **argv)
{
    const char *older = NULL, *keep_text = NULL;
    int dry_run = 0;
    const struct cli_opt opts[] = {{"--older-than", &older, NULL, 0},
                                   {"--keep", &keep_text, NULL, 0},
                                   {"--dry-run", NULL, &dry_run, 0},
                                   {0}};
    struct cli_read r;
    int rc = cli_read_parse(argc, argv, opts, usage_text, 0, 0, &r);
    if (rc != CLI_READ_GO)
        return rc;
    store_prune_opts o = {0, -1, dry_run};
    int64_t now = tftap_now_us(), age = 0;
    if (!older && !keep_text) {
        cli_usage_error(argv[0], "say which runs: --older-than DURATION or --keep N");
        return 2;
    }
    if (older) {
        if (cli_parse_duration(older, &age) != 0) {
            cli_usage_error(
                argv[0], "--older-than takes a duration like 12h, 7d or 2w, not '%.200s'", older);
            return 2;
        }
        o.before_us = now - age;
    }
    if (keep_text) {
        char *end = NULL;
        errno = 0;
        long long k = strtoll(keep_text, &end, 10);
        if (errno || end == keep_text || *end || k < 0) {
            cli_usage_error(argv[0], "--keep takes a number of runs (0 or more), not '%.200s'",
                            keep_text);
            return 2;
        }
        o.keep = k;
    }
    const char *path = r.path;
    if (!store_path_is_url(path) && store_file_is_bundle(path) == 1) {
        cli_error("%s is a bundle, which is read only: prune removes runs from a database",
                  STORE_SHOWN(path));
        return 1;
    }
    store *s = NULL;
    errno = 0;
    rc = store_open(path, 0, &s);
    if (rc) {
        cli_store_open_failed(path, 0, rc);
        return 1;
    }
    struct prune_ctx c = {TFTAP_BUF_INIT, r.json, dry_run, 0, 0};
    if (r.json)
        tftap_buf_printf(&c.out, "{\"dry_run\":%s,\"runs\":[", dry_run ? "true" : "false");
    store_prune_info info;
    rc = store_prune(s, &o, each_run, &c, &info);
    int code = 0;
    if (rc == TFTAP_EIO && c.n + c.left == 0) {
        cli_error("cannot tell which runs of %s are being recorded (its lock file %s-runs.lock: "
                  "%s): nothing removed",
                  STORE_SHOWN(path), STORE_SHOWN(path), strerror(errno ? errno : EIO));
        code = 1;
    } else if (rc) {
        if (!r.json)
            (void)cli_flush(&c.out);
        cli_error("pruning %s: %s%s%s", STORE_SHOWN(path), tftap_strerror(rc),
                  *store_errmsg(s) ? ": " : "", store_errmsg(s));
        code = 1;
    } else if (r.json) {
        tftap_buf_printf(&c.out,
                         "%s],\"removed\":%lld,\"recording\":%lld,\"processes\":%lld,"
                         "\"calls\":%lld,\"messages\":%lld,\"gaps\":%lld,\"schemas\":%lld,"
                         "\"reclaim\":\"%s\",\"bytes_before\":%lld,\"bytes_after\":%lld}\n",
                         c.n + c.left ? "\n  " : "", (long long)info.runs,
                         (long long)info.recording, (long long)info.processes,
                         (long long)info.calls, (long long)info.messages, (long long)info.gaps,
                         (long long)info.schemas, reclaim_name(info.reclaim),
                         (long long)info.bytes_before, (long long)info.bytes_after);
        code = cli_flush(&c.out);
    } else {
        summary_text(&c.out, path, &o, &info);
        code = cli_flush(&c.out);
    }
    tftap_buf_done(&c.out);
    store_close(s);
    cli_read_done(&r);
    return code;
}
