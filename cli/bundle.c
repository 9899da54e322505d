/* tftap bundle RUN -o FILE: one run in a self-contained, redacted file to
 * attach to a bug report (docs/replay.md, "Bundles"). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"
#include "cli/verdict.h"

static const char usage_text[] =
    "usage: tftap bundle RUN -o FILE [--force] [--db PATH] [--json]\n\n"
    "Write RUN (an id, 'last', or a bundle or database file, FILE:RUN for one of its\n"
    "runs) to FILE: one SQLite file with that run, its provider processes, calls, gaps\n"
    "and the schemas they name, in the same schema as any tftap database, so that\n"
    "show, calls, check, diff, export, serve and replay read it (tftap show FILE).\n"
    "Redacted on the way: every value the record holds redacted (the schema's\n"
    "sensitive and write-only marks, and what core marked, redacted at the run's\n"
    "end), also of a run recorded with --record-sensitive (found by the schema's\n"
    "marks and the hashes of what core marked), becomes an HMAC-SHA256\n"
    "under a fresh key that is not kept (equal secrets stay equal inside the bundle,\n"
    "nothing outside can be matched with them); raw messages are left out; the\n"
    "working directory, provider paths, pids and every argument but plain command\n"
    "words are dropped. A run whose values cannot be redacted safely is refused.\n"
    "Prints what the bundle holds, and what it redacted by rule.\n\n"
    "  -o, --output FILE   the bundle to write\n"
    "  --force             replace FILE if it exists\n"
    "  --json              the summary as JSON\n"
    "  --db PATH           the database (default $TFTAP_DB or .tftap/tftap.db)\n";

struct summary {
    tftap_buf providers; /* text: "addr version (protocol N)", once each */
    tftap_buf pjson;
    tftap_buf seen; /* "addr\tversion\tN\n" of the providers listed */
    int nproviders;
    int64_t changes;
    int64_t failed;
};

/* Each provider once, however many processes of it the run started. */
static int each_process(void *ctx, const store_process_row *p)
{
    struct summary *s = ctx;
    tftap_buf key = TFTAP_BUF_INIT;
    tftap_buf_printf(&key, "\n%s\t%s\t%d\n", p->provider ? p->provider : "?",
                     p->version ? p->version : "?", p->protocol);
    if (s->seen.len == 0)
        tftap_buf_putc(&s->seen, '\n');
    int dup = tftap_buf_failed(&key) || strstr(tftap_buf_cstr(&s->seen), key.data) != NULL;
    if (!dup)
        tftap_buf_append(&s->seen, key.data + 1, key.len - 1);
    tftap_buf_done(&key);
    if (dup)
        return 0;
    tftap_buf_printf(&s->providers, "%s%s %s (protocol %d)", s->nproviders ? ", " : "",
                     p->provider ? p->provider : "?", p->version ? p->version : "?", p->protocol);
    tftap_buf_puts(&s->pjson, s->nproviders ? "," : "");
    tftap_buf_puts(&s->pjson, "{\"provider\":");
    cli_json_str(&s->pjson, p->provider);
    tftap_buf_puts(&s->pjson, ",\"version\":");
    cli_json_str(&s->pjson, p->version);
    tftap_buf_printf(&s->pjson, ",\"protocol\":%d}", p->protocol);
    s->nproviders++;
    return 0;
}

static int each_change(void *ctx, const store_change_row *c)
{
    struct summary *s = ctx;
    if (!c->superseded)
        s->changes++;
    return 0;
}

static int each_call(void *ctx, const store_call_row *c)
{
    struct summary *s = ctx;
    s->failed += c->failed;
    return 0;
}

static int each_run(void *ctx, const store_run_row *r)
{
    store_run_row *out = ctx;
    out->id = r->id;
    out->calls = r->calls;
    out->cli_name = r->cli_name ? strdup(r->cli_name) : NULL;
    out->command = r->command ? strdup(r->command) : NULL;
    out->args_json = r->args_json ? strdup(r->args_json) : NULL;
    return 0;
}

/* The bundle read back, as any reader will see it. */
static int print_summary(const char *file, int json, const store_bundle_info *info)
{
    store *b = NULL;
    if (cli_open_store(file, &b))
        return 1;
    struct summary s = {TFTAP_BUF_INIT, TFTAP_BUF_INIT, TFTAP_BUF_INIT, 0, 0, 0};
    store_run_row run;
    memset(&run, 0, sizeof run);
    int64_t id = 0;
    struct stat st;
    int rc = store_resolve_run(b, "last", &id);
    if (!rc)
        rc = store_run_get(b, id, each_run, &run);
    if (!rc)
        rc = store_processes_each(b, id, each_process, &s);
    if (!rc)
        rc = store_changes_each(b, id, NULL, each_change, &s);
    if (!rc)
        rc = store_calls_each(b, id, NULL, NULL, each_call, &s);
    cli_verdict v;
    memset(&v, 0, sizeof v);
    if (!rc)
        rc = cli_verdict_read(b, id, 0, &v);
    if (rc || stat(file, &st) != 0) {
        cli_error("reading the bundle %s back: %s", file, rc ? store_errmsg(b) : strerror(errno));
        rc = 1;
        goto done;
    }
    tftap_buf out = TFTAP_BUF_INIT;
    tftap_buf cmd = TFTAP_BUF_INIT;
    tftap_buf_puts(&cmd, run.command ? run.command : "");
    sj_doc *doc = NULL;
    if (run.args_json && sj_parse(run.args_json, strlen(run.args_json), 0, &doc) == 0)
        for (const sj_node *a = sj_root(doc)->child; a; a = a->next)
            if (a->kind == SJ_STRING)
                tftap_buf_printf(&cmd, " %s", a->str);
    sj_free(doc);
    /* The rest of what was keyed afresh the provider's schema marks. */
    int64_t by_schema = info->redacted - info->core_mark - info->known_secret;
    if (by_schema < 0)
        by_schema = 0;
    if (json) {
        tftap_buf_puts(&out, "{\"bundle\":");
        cli_json_str(&out, file);
        tftap_buf_printf(&out, ",\"run\":%lld,\"command\":", (long long)run.id);
        cli_json_str(&out, tftap_buf_cstr(&cmd));
        tftap_buf_puts(&out, ",\"providers\":[");
        tftap_buf_append(&out, s.pjson.data, s.pjson.len);
        tftap_buf_printf(
            &out,
            "],\"calls\":%lld,\"failed_calls\":%lld,\"changes\":%lld,"
            "\"processes\":%lld,\"schemas\":%lld,\"gaps\":%lld,"
            "\"redacted\":%lld,\"redacted_from_clear\":%lld,"
            "\"redacted_by_rule\":{\"schema\":%lld,\"core_mark\":%lld,"
            "\"known_secret\":%lld},"
            "\"raw_messages_left_out\":%lld,\"unreadable_json_left_out\":%lld,"
            "\"size\":%lld,\"verdict\":",
            (long long)run.calls, (long long)s.failed, (long long)s.changes,
            (long long)info->processes, (long long)info->schemas, (long long)info->gaps,
            (long long)info->redacted, (long long)info->rekeyed_clear, (long long)by_schema,
            (long long)info->core_mark, (long long)info->known_secret,
            (long long)info->raw_messages, (long long)info->dropped_json, (long long)st.st_size);
        cli_verdict_json(&v, &out);
        tftap_buf_puts(&out, "}\n");
    } else {
        tftap_buf_printf(&out, "Bundle %s: run %lld\n", file, (long long)run.id);
        tftap_buf_puts(&out, "  verdict:    ");
        cli_verdict_line(&v, run.id, &out);
        tftap_buf_printf(&out, "  command:    %s\n", tftap_buf_cstr(&cmd));
        tftap_buf_printf(&out, "  providers:  %s\n",
                         s.nproviders ? tftap_buf_cstr(&s.providers) : "none");
        tftap_buf_printf(&out, "  calls:      %lld (%lld failed)\n", (long long)run.calls,
                         (long long)s.failed);
        tftap_buf_printf(&out, "  changes:    %lld\n", (long long)s.changes);
        tftap_buf_printf(&out,
                         "  redacted:   %lld sensitive value%s keyed afresh: %lld marked so by "
                         "the provider's schema (sensitive or write-only), %lld by core (the "
                         "plan or state), %lld equal to one of those%s\n",
                         (long long)info->redacted, info->redacted == 1 ? "" : "s",
                         (long long)by_schema, (long long)info->core_mark,
                         (long long)info->known_secret,
                         info->rekeyed_clear ? " (some recorded in clear)" : "");
        tftap_buf_puts(&out, "  left out:   working directory, provider paths, pids");
        if (info->raw_messages)
            tftap_buf_printf(&out, ", %lld raw messages", (long long)info->raw_messages);
        if (info->dropped_json)
            tftap_buf_printf(&out, ", %lld unreadable message JSON", (long long)info->dropped_json);
        tftap_buf_printf(&out, "\n  size:       %lld bytes\n", (long long)st.st_size);
    }
    tftap_buf_done(&cmd);
    rc = cli_flush(&out);
    tftap_buf_done(&out);
done:
    cli_verdict_done(&v);
    free((char *)run.cli_name);
    free((char *)run.command);
    free((char *)run.args_json);
    tftap_buf_done(&s.providers);
    tftap_buf_done(&s.pjson);
    tftap_buf_done(&s.seen);
    store_close(b);
    return rc;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cli_bundle(int argc, char **argv)
{
    const char *db = NULL, *output = NULL, *pos[1];
    int force = 0, json = 0, help = 0, npos = 0;
    const struct cli_opt opts[] = {
        {"--output", &output, NULL, 'o'}, {"--force", NULL, &force, 0}, {0}};
    if (cli_store_args(argc, argv, opts, &db, &json, &help, pos, 1, &npos) != 0)
        return 2;
    if (help) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (npos != 1) {
        cli_usage_error(argv[0], "bundle needs RUN");
        return 2;
    }
    if (!output || !*output) {
        cli_usage_error(argv[0], "bundle needs -o FILE");
        return 2;
    }
    const char *path = NULL;
    char *owned = NULL;
    store *s = NULL;
    int64_t run = 0;
    int rc = cli_open_run(launch_db_path(db), pos[0], &s, &path, &run, &owned);
    if (rc)
        return rc;
    struct stat st;
    if (same_file(path, output)) {
        cli_error("%s is the database the run is read from: name another FILE", output);
        rc = 1;
        goto done;
    }
    if (!force && lstat(output, &st) == 0) {
        cli_error("%s exists (--force replaces it)", output);
        rc = 1;
        goto done;
    }
    store_bundle_info info;
    errno = 0;
    int err = store_bundle_write(s, run, output, &info);
    if (err == TFTAP_EDECODE)
        cli_error("cannot bundle run %lld safely: %s", (long long)run, info.why);
    else if (err == TFTAP_EIO)
        cli_error("cannot write %s: %s", output, strerror(errno ? errno : EIO));
    else if (err == TFTAP_ENOTFOUND)
        cli_error("no run %lld in %s", (long long)run, STORE_SHOWN(path));
    else if (err)
        cli_error("writing %s: %s%s%s", output, tftap_strerror(err), info.why[0] ? ": " : "",
                  info.why);
    rc = err ? 1 : print_summary(output, json, &info);
done:
    store_close(s);
    free(owned);
    return rc;
}
