/* tftap serve: the web UI over a database, read only. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli/cli.h"
#include "launch/launch.h"
#include "cli/cli_store.h"
#include "web/web.h"

extern char **environ;

static const char usage_text[] =
    "usage: tftap serve [SOURCE] [--db PATH] [--listen ADDR:PORT] [--open]\n\n"
    "Serve the recorded runs as web pages (runs, call waterfalls, decoded calls, plans,\n"
    "schemas) and a JSON API (docs/web.md), until interrupted. The first line printed is\n"
    "the URL to open; it carries a random token, without which every request is refused.\n"
    "The database is opened read only; a run still being recorded shows up live.\n"
    "SOURCE, a bundle (tftap bundle), a database file or a PostgreSQL URI, is the same\n"
    "as --db SOURCE.\n\n"
    "  --db PATH           the database (default: $TFTAP_DB, else .tftap/tftap.db)\n"
    "  --listen ADDR:PORT  where to listen (default 127.0.0.1:0: a free loopback port);\n"
    "                      any other than a loopback address exposes the recorded values\n"
    "                      to whoever on the network gets the URL\n"
    "  --open              open the URL in a browser (xdg-open)\n";

static void open_browser(const char *url)
{
    char *argv[] = {"xdg-open", (char *)url, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "xdg-open", NULL, NULL, argv, environ) != 0)
        cli_error("--open: xdg-open could not be started: open the URL above by hand");
}

int cli_serve(int argc, char **argv)
{
    const char *db = NULL, *listen = NULL, *pos[1];
    int open_it = 0, help = 0, npos = 0;
    const struct cli_opt opts[] = {
        {"--listen", &listen, NULL, 0}, {"--open", NULL, &open_it, 0}, {0}};
    if (cli_store_args(argc, argv, opts, &db, NULL, &help, pos, 1, &npos) != 0)
        return 2;
    if (help) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (npos > 0 && db) {
        cli_usage_error(argv[0], "unexpected argument '%s'", pos[0]);
        return 2;
    }
    if (npos > 0) {
        /* A SOURCE: a bundle or database file (or a PostgreSQL URI), the
         * same as --db SOURCE. */
        struct stat st;
        if (!store_path_is_url(pos[0]) && (stat(pos[0], &st) != 0 || S_ISDIR(st.st_mode))) {
            cli_error("no file %s (see 'tftap serve --help')", pos[0]);
            return 2;
        }
        db = pos[0];
    }
    web_opts wo = {.listen = listen};
    const char *idle = getenv("TFTAP_SERVE_IDLE_TIMEOUT");
    if (idle && *idle)
        wo.idle_timeout = (unsigned)strtoul(idle, NULL, 10);
    const char *path = launch_db_path(db);
    wo.db_path = path;
    store *s = NULL;
    errno = 0;
    int rc = store_open(path, STORE_OPEN_READONLY, &s);
    if (rc) {
        if (store_path_is_url(path))
            cli_store_open_failed(path, STORE_OPEN_READONLY, rc);
        else if (rc == TFTAP_ENOTFOUND)
            cli_error("no database at %s (record one with 'tftap run', or pass --db)",
                      STORE_SHOWN(path));
        else if (rc == TFTAP_EIO)
            cli_error("cannot open %s: %s", path, strerror(errno ? errno : EIO));
        else if (rc == TFTAP_ESTORE)
            cli_error("cannot read %s: not a tftap database, or one of another tftap version "
                      "(an older one is brought up to date by 'tftap runs')",
                      STORE_SHOWN(path));
        else
            cli_error("cannot open %s: %s", path, tftap_strerror(rc));
        return 1;
    }
    web_server *w = NULL;
    errno = 0;
    rc = web_server_new(s, &wo, &w);
    if (rc) {
        if (rc == TFTAP_EINVAL)
            cli_error("--listen wants ADDR:PORT with a numeric address (127.0.0.1:8080, "
                      "[::1]:0), not '%s'",
                      listen);
        else if (rc == TFTAP_ENOLIB)
            cli_error("serve needs libmicrohttpd.so.12 (Debian: libmicrohttpd12): %s",
                      web_server_load_error());
        else if (rc == TFTAP_EIO)
            cli_error("cannot listen on %s: %s", listen ? listen : "127.0.0.1:0",
                      strerror(errno ? errno : EIO));
        else
            cli_error("cannot start the server: %s", tftap_strerror(rc));
        store_close(s);
        return rc == TFTAP_EINVAL ? 2 : 1;
    }
    signal(SIGPIPE, SIG_IGN);
    printf("%s\n", web_server_url(w));
    fflush(stdout);
    if (!web_server_is_loopback(w))
        fprintf(stderr,
                "tftap: WARNING: listening on %s, not a loopback address: anyone on the network "
                "who gets the URL above can read every recorded run in %s (resource values, "
                "provider responses; secrets only as redacted hashes). Ctrl-C to stop.\n",
                listen, STORE_SHOWN(path));
    else
        fprintf(stderr, "tftap: serving %s read only; Ctrl-C to stop\n", STORE_SHOWN(path));
    if (store_is_snapshot(s))
        fprintf(stderr,
                "tftap: %s is read as a snapshot (its directory is not writable and no "
                "recorder has it open): runs recorded from now on are not shown\n",
                STORE_SHOWN(path));
    if (open_it)
        open_browser(web_server_url(w));
    rc = web_server_run(w);
    web_server_free(w);
    store_close(s);
    if (rc) {
        cli_error("serving: %s", tftap_strerror(rc));
        return 1;
    }
    return 0;
}
