/* tftap-replay-provider, the program behind the hidden `tftap
 * replay-provider` (cli/replay_provider_exec.c hands over to it): the
 * process tofu starts as a provider when a recording stands in for it;
 * `tftap replay` writes the scripts that exec it. It is a program of its own
 * because it alone links gRPC core. Everything it says goes to stderr as "tftap replay-provider:
 * ..." lines: the client shows a provider's stderr in its log. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"
#include "plugin/plugin.h"
#include "replay/replay.h"

static const char usage_text[] =
    "usage: tftap replay-provider --provider ADDR [--run RUN] [--ignore PATTERN]... [--db PATH]\n"
    "                             [--claims DIR]\n\n"
    "Serve provider ADDR of a recorded run (default: the last) as a go-plugin provider,\n"
    "answering every call from the recording. tofu/terraform start it (tftap replay\n"
    "writes the scripts that do); started by hand it says it is a plugin and exits 1.\n"
    "  --provider ADDR   the provider's address as recorded (see 'tftap calls RUN')\n"
    "  --run RUN         the recorded run: an id or 'last'\n"
    "  --ignore PATTERN  attribute paths whose values may differ from the recording\n"
    "                    (as 'tftap diff --ignore')\n"
    "  --claims DIR      the directory every replaying process of one command shares:\n"
    "                    calls asked the same and answered differently are answered\n"
    "                    once in the whole replay, in recorded order\n";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    /* One write per line: several replayed providers share the client's
     * stderr, and their lines must not interleave. */
    tftap_buf b = TFTAP_BUF_INIT;
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    tftap_buf_puts(&b, "tftap replay-provider: ");
    tftap_buf_puts(&b, n >= 0 ? msg : fmt);
    tftap_buf_putc(&b, '\n');
    if (!tftap_buf_failed(&b) && write(STDERR_FILENO, b.data, b.len) < 0) {
        /* nobody reads our stderr any more: nothing to tell */
    }
    free(msg);
    tftap_buf_done(&b);
}

static void log_line(void *ctx, const char *line)
{
    (void)ctx;
    say("%s", line);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},
        {"run", required_argument, NULL, 'r'},
        {"provider", required_argument, NULL, 'p'},
        {"ignore", required_argument, NULL, 'i'},
        {"claims", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db = NULL, *run = "last", *provider = NULL, *claims = NULL;
    const char **ignore = calloc((size_t)argc + 1, sizeof *ignore);
    size_t n_ignore = 0;
    int code = 1, c;
    store *s = NULL;
    if (ignore == NULL) {
        say("out of memory");
        return 1;
    }
    optind = 0;
    while ((c = cli_getopt(argc, argv, "h", longopts)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'r':
            run = optarg;
            break;
        case 'p':
            provider = optarg;
            break;
        case 'i':
            ignore[n_ignore++] = optarg;
            break;
        case 'c':
            claims = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            code = 0;
            goto out;
        default:
            code = 2;
            goto out;
        }
    }
    if (optind < argc) {
        cli_usage_error("replay-provider", "unexpected argument '%s'", argv[optind]);
        code = 2;
        goto out;
    }
    if (provider == NULL || provider[0] == '\0') {
        cli_usage_error("replay-provider", "--provider ADDR is required");
        code = 2;
        goto out;
    }
    /* Like any provider: without go-plugin's cookie nobody is listening. */
    if (!plugin_cookie_ok(NULL)) {
        fputs(PLUGIN_NOT_A_PROGRAM_MESSAGE, stderr);
        goto out;
    }
    /* go-plugin's servers ignore interrupts: the client forwards ^C to the
     * whole process group and then asks the provider to stop itself. */
    signal(SIGINT, SIG_IGN);

    const char *path = launch_db_path(db);
    int rc = store_open(path, STORE_OPEN_READONLY, &s);
    if (rc != 0) {
        say("cannot open %s: %s", STORE_SHOWN(path),
            store_path_is_url(path) && *store_open_error() ? store_open_error()
                                                           : tftap_strerror(rc));
        goto out;
    }
    int64_t run_id = 0;
    rc = store_resolve_run(s, run, &run_id);
    if (rc != 0) {
        say("%s has no run '%s'", STORE_SHOWN(path), run);
        goto out;
    }
    replay_server_opts o;
    memset(&o, 0, sizeof o);
    o.s = s;
    o.run_id = run_id;
    o.provider = provider;
    o.book.ignore = ignore;
    o.book.n_ignore = n_ignore;
    o.book.claims_dir = claims;
    o.out_fd = STDOUT_FILENO;
    o.log = log_line;
    tftap_buf err = TFTAP_BUF_INIT;
    rc = replay_serve(&o, &err);
    if (rc != 0)
        say("%s", err.len > 0 ? tftap_buf_cstr(&err) : tftap_strerror(rc));
    else
        code = 0;
    tftap_buf_done(&err);
out:
    store_close(s);
    free(ignore);
    return code;
}
