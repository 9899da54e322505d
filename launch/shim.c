/* launch: a shim, run as the provider a shim directory stands for (tftap
 * shim META_JSON, cli/shim_opts.c). OpenTofu/Terraform start the shim script
 * believing it is the provider; it execs tftap, and we put ourselves
 * between the two. Under `tftap wrap`, where no `tftap run` is around the
 * command, each shim joins the run of the command that started it, and its
 * recorder, leaving, redacts what it can tell is sensitive. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "launch/launch_int.h"
#include "proxy/proxy.h"
#include "recorder/recorder.h"
#include "store/store.h"

/* Set by a shim for the provider it starts. A shim that finds it set was
 * started by a shim (directly, or through scripts or copies no path check
 * can see): it refuses instead of starting shims without end. */
#define SHIM_DEPTH_ENV "TFTAP_SHIM_DEPTH"

static void shim_warn(void *ctx, const char *message)
{
    (void)ctx;
    launch_error("%s", message);
}

/* TFTAP_RUN_ID: a positive decimal run id, or absent. */
static int run_id_from_env(int64_t *out)
{
    const char *s = getenv("TFTAP_RUN_ID");
    *out = 0;
    if (s == NULL || s[0] == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v <= 0)
        return -1;
    *out = v;
    return 0;
}

/* ---- one run per CLI command under `tftap wrap` ---------------------------
 * Without `tftap run` around it, a shim finds the command that started it:
 * its parent (the shim script execs tftap). The parent's pid and start time
 * (and the boot, pids are reused across boots) name the command; every
 * shim of that command joins the same run row, whose command line is the
 * parent's. */
#define CMDLINE_MAX (256u << 10)

static int read_small(const char *path, size_t max, tftap_buf *out)
{
    return tftap_read_file(path, max, out);
}

struct cli_proc {
    tftap_buf key;
    tftap_buf cmdline; /* NUL-separated */
    char **argv;       /* into cmdline */
    int argc;
    char *cwd;
    const char *name; /* "tofu", "terraform" or NULL */
};

static void cli_proc_done(struct cli_proc *c)
{
    tftap_buf_done(&c->key);
    tftap_buf_done(&c->cmdline);
    free(c->argv);
    free(c->cwd);
}

/* Fill c from /proc for pid; 0, or -1 when it cannot be read (a parent that
 * went away, no /proc). */
static int cli_proc_read(pid_t pid, struct cli_proc *c)
{
    char path[64];
    tftap_buf stat = TFTAP_BUF_INIT, boot = TFTAP_BUF_INIT;
    int rc = -1;

    memset(c, 0, sizeof *c);
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if (read_small(path, 4096, &stat) != 0 ||
        read_small("/proc/sys/kernel/random/boot_id", 128, &boot) != 0)
        goto done;
    /* Field 22, start time, counted after the ")" that ends field 2 (the
     * name may hold spaces and parentheses). */
    const char *p = strrchr(tftap_buf_cstr(&stat), ')');
    if (p == NULL)
        goto done;
    unsigned long long start = 0;
    int field = 2, ok = 0;
    for (p++; *p && !ok; p++) {
        if (*p != ' ')
            continue;
        if (++field == 22) {
            char *end = NULL;
            start = strtoull(p + 1, &end, 10);
            ok = end != p + 1;
        }
    }
    if (!ok)
        goto done;
    const char *b = tftap_buf_cstr(&boot);
    size_t blen = strcspn(b, "\n");
    tftap_buf_append(&c->key, b, blen);
    tftap_buf_printf(&c->key, "/%ld/%llu", (long)pid, start);
    tftap_buf_cstr(&c->key);

    snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
    if (read_small(path, CMDLINE_MAX, &c->cmdline) != 0 || c->cmdline.len == 0)
        goto done;
    tftap_buf_putc(&c->cmdline, '\0');
    if (tftap_buf_failed(&c->key) || tftap_buf_failed(&c->cmdline))
        goto done;
    size_t n = 0;
    for (size_t i = 0; i + 1 < c->cmdline.len; i++)
        n += c->cmdline.data[i] == '\0';
    if ((c->argv = calloc(n + 2, sizeof *c->argv)) == NULL)
        goto done;
    for (size_t i = 0; i + 1 < c->cmdline.len; i += strlen(c->cmdline.data + i) + 1)
        c->argv[c->argc++] = c->cmdline.data + i;
    if (c->argc == 0)
        goto done;
    snprintf(path, sizeof path, "/proc/%ld/cwd", (long)pid);
    c->cwd = realpath(path, NULL); /* NULL: unknown, recorded as such */
    const char *base = strrchr(c->argv[0], '/') ? strrchr(c->argv[0], '/') + 1 : c->argv[0];
    c->name = strstr(base, "terraform") ? "terraform" : strstr(base, "tofu") ? "tofu" : NULL;
    rc = 0;
done:
    tftap_buf_done(&stat);
    tftap_buf_done(&boot);
    return rc;
}

/* The run of the CLI command that started us, joined; 0 when there is
 * none to join (the shim then records a run of its own, as before). */
/* The command the shim joined (join_cli_run), kept for its recorder: the
 * run's recorded arguments lose their secrets at the first redaction, and
 * a recorder leaving later must still learn them. The run joined is held
 * (*hold) for the shim's life: its recorder holds it too once it has
 * written its first rows. */
static struct cli_proc joined;

/* Under tftap wrap into a PostgreSQL record: the record (the command's
 * run is recorded into its spool, *spool, and copied into the record by
 * the last recorder out once the command is over: run_spool.c). */
static const char *wrap_record;
/* --record-sensitive: values in clear by choice, recorded live into it. */
static int wrap_live;

static int64_t join_cli_run(const char *db, store_hold **hold, char **spool)
{
    struct cli_proc c;
    store *s = NULL;
    int64_t run_id = 0;
    pid_t parent = getppid();
    memset(&c, 0, sizeof c);
    *spool = NULL;
    /* An orphan's parent is init (or a subreaper): no command to join. */
    if (parent <= 1 || cli_proc_read(parent, &c) != 0) {
        cli_proc_done(&c);
        return 0;
    }
    int rc = 0;
    if (store_path_is_url(db) && !wrap_live) {
        /* The command's spool, which all its shims open: nothing of the
         * run reaches the server before its redaction. */
        rc = store_open(db, STORE_OPEN_CREATE, &s);
        if (rc == 0)
            rc = run_spool_make(s, db, tftap_buf_cstr(&c.key), spool);
        store_close(s);
        s = NULL;
        if (rc == 0)
            db = *spool;
    }
    if (rc == 0)
        rc = store_open(db, STORE_OPEN_CREATE, &s);
    if (rc == 0)
        rc = store_run_join_held(s, tftap_buf_cstr(&c.key), c.argv[0], c.argc - 1,
                                 (const char *const *)c.argv + 1, c.cwd, c.name, &run_id, hold);
    if (rc == 0 && *spool && store_run_hold_back(s, run_id, 1) != 0)
        rc = TFTAP_ESTORE; /* never a run in clear the push would take */
    if (rc != 0) {
        run_id = 0; /* the recorder says what is wrong with the database */
        free(*spool);
        *spool = NULL;
    }
    store_close(s);
    if (run_id > 0)
        joined = c; /* the process's whole life: never freed */
    else
        cli_proc_done(&c);
    return run_id;
}

/* Until the command joined has exited, or at most max_ms. */
static void wait_cli_gone(unsigned max_ms)
{
    const char *k = joined.key.data ? strchr(joined.key.data, '/') : NULL;
    long pid = k ? strtol(k + 1, NULL, 10) : 0;
    if (pid <= 1)
        return;
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0)
        return; /* gone already */
    /* The pid may name another process by now. */
    struct cli_proc now;
    int same = cli_proc_read((pid_t)pid, &now) == 0 &&
               strcmp(tftap_buf_cstr(&now.key), tftap_buf_cstr(&joined.key)) == 0;
    cli_proc_done(&now);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (same && poll(&p, 1, (int)max_ms) < 0 && errno == EINTR)
        ;
    close(fd);
}

/* Under tftap wrap nothing of tftap sees the command end: each recorder,
 * its part written, redacts the run by what core marks as far as can be
 * told from here: the local state (its marks), the configuration's
 * sensitive variables with the values the command's arguments and this
 * environment (the CLI's, passed on to its providers) give them, and
 * copies of what the providers' schemas mark (docs/database.md). In the
 * recorder's process: stderr goes nowhere, problems cost the redaction. */
static void shim_run_left(const char *db, int64_t run_id)
{
    extern char **environ;
    store *s = NULL;
    struct run_words w = {NULL, NULL, 0};
    if (store_open(db, 0, &s) != 0)
        return;
    if (run_words_read(s, run_id, &w) == 0 && w.cwd) {
        if (joined.argv && joined.argc > 0) {
            /* The command's own words, read when the shim joined it. */
            for (size_t i = 0; i < w.n; i++)
                free(w.args[i]);
            free(w.args);
            w.args = calloc((size_t)joined.argc, sizeof *w.args);
            w.n = 0;
            for (int i = 1; w.args && i < joined.argc; i++)
                if ((w.args[w.n] = strdup(joined.argv[i])) != NULL)
                    w.n++;
        }
        tftap_buf state = TFTAP_BUF_INIT;
        analysis_match_doc doc = {NULL, 0, 0, 0, NULL, 0};
        size_t ndocs = 0;
        if (run_local_state(w.cwd, w.args, &state) == 0 && state.len > 0) {
            doc = (analysis_match_doc){state.data, state.len, 0, 0, NULL, 0};
            ndocs = 1;
        }
        /* The file is rewritten by the last recorder out (the others still
         * write into it), for the copies its unused space may keep. */
        int64_t left = 1;
        (void)store_run_recorders(s, run_id, &left);
        (void)run_redact_secrets(s, run_id, w.cwd, w.args, environ, &doc, ndocs, left == 0);
        tftap_buf_done(&state);
        /* Into a PostgreSQL record: once the command is over (it may
         * start this provider again, into the same run), by whoever is
         * the last recorder out then. */
        if (wrap_record && left == 0) {
            store_close(s);
            s = NULL;
            wait_cli_gone(RECORDER_LINGER_MS);
            if (store_open(db, 0, &s) == 0 && store_run_recorders(s, run_id, &left) == 0 &&
                left == 0) {
                store_close(s);
                s = NULL;
                run_spool_publish(wrap_record, db, run_id, run_finish_wait_ms(), 1);
            }
        }
    }
    run_words_done(&w);
    store_close(s);
}

int launch_shim(const char *meta_path, char **args)
{
    proxy_meta meta;
    proxy_config cfg;
    tftap_buf err = TFTAP_BUF_INIT;
    int code;

    /* Same contract as any go-plugin provider: started by hand, say so. */
    if (!plugin_cookie_ok(NULL)) {
        fputs(PLUGIN_NOT_A_PROGRAM_MESSAGE, stderr);
        return 1;
    }
    if (proxy_meta_load(meta_path, &meta, &err) != 0) {
        launch_error("%s", tftap_buf_cstr(&err));
        tftap_buf_done(&err);
        return 1;
    }

    const char *why = NULL;
    const char *depth = getenv(SHIM_DEPTH_ENV);
    char *inner = launch_shim_meta_path(meta.binary);
    if (depth != NULL && depth[0] != '\0')
        why = "was started by another tftap shim (" SHIM_DEPTH_ENV " is set)";
    else if (launch_is_self(meta.binary))
        why = "names tftap itself as its provider";
    else if (inner != NULL)
        why = "names another tftap shim as its provider";
    free(inner);
    if (why != NULL) {
        /* One line, on stderr and as the handshake line: go-plugin prints
         * an unrecognised handshake line in the CLI's own error. */
        tftap_buf line = TFTAP_BUF_INIT;
        tftap_buf_printf(&line,
                         "tftap: the shim %s %s; refusing to start it (unset TF_CLI_CONFIG_FILE "
                         "or wrap again)",
                         meta_path, why);
        fprintf(stderr, "%s\n", tftap_buf_cstr(&line));
        printf("%s\n", tftap_buf_cstr(&line));
        fflush(stdout);
        tftap_buf_done(&line);
        proxy_meta_done(&meta);
        return 1;
    }
    if (setenv(SHIM_DEPTH_ENV, "1", 1) != 0) {
        launch_error("cannot set %s: %s", SHIM_DEPTH_ENV, strerror(errno));
        proxy_meta_done(&meta);
        return 1;
    }

    proxy_config_from_meta(&cfg, &meta);
    cfg.args = args;
    /* TFTAP_DB names another database than the metadata's; tftap run
     * exports its own without the password, which the metadata keeps. */
    const char *db_env = getenv("TFTAP_DB");
    if (db_env != NULL && db_env[0] != '\0') {
        char *bare = cfg.db ? store_without_password(cfg.db) : NULL;
        if (bare == NULL || strcmp(bare, db_env) != 0)
            cfg.db = db_env;
        free(bare);
    }
    if (run_id_from_env(&cfg.run_id) != 0) {
        launch_error("TFTAP_RUN_ID is not a positive integer; recording under a new run");
        cfg.run_id = 0;
    }
    store_hold *hold = NULL;
    char *spool = NULL;
    wrap_live = meta.record_sensitive;
    if (cfg.run_id == 0 && cfg.db != NULL &&
        (cfg.run_id = join_cli_run(cfg.db, &hold, &spool)) > 0) {
        if (spool) {
            wrap_record = cfg.db;
            cfg.db = spool;
        }
        cfg.leave_run = 1;
        if (!meta.record_sensitive)
            cfg.run_left = shim_run_left;
    }
    if (cfg.db != NULL && store_path_is_url(cfg.db) && spool == NULL && !wrap_live) {
        /* No command's run to join (the join failed, or no tftap run
         * around us): a spool of its own, which the next `tftap run` into
         * the record copies, redacted by what its record tells. Nothing
         * in clear reaches the server; no spool, no record. */
        free(spool);
        spool = NULL;
        store *rec = NULL;
        if (store_open(cfg.db, STORE_OPEN_CREATE, &rec) != 0 ||
            run_spool_make(rec, cfg.db, NULL, &spool) != 0)
            spool = NULL;
        store_close(rec);
        if (spool == NULL)
            launch_error(
                "%s: no spool to hold its calls in until the run is redacted: not recorded",
                meta.provider);
        cfg.db = spool;
        cfg.run_id = 0;
        cfg.leave_run = 0;
        cfg.run_left = NULL;
    }
    /* Under `tftap run`: a lock its recorder holds until the record is
     * written, so that run returns only then. */
    const char *run_dir = getenv("TFTAP_RUN_DIR");
    if (run_dir != NULL && run_dir[0] != '\0' &&
        (cfg.recorder_hold_fd = launch_recorder_lock(run_dir, meta.provider)) < 0)
        launch_error("cannot lock in %s: %s; tftap run may return before this provider's record "
                     "is complete",
                     run_dir, strerror(errno));
    cfg.warn = shim_warn;
    otlp_config oc;
    char *otlp_url = NULL;
    if (launch_otlp_config(meta.otlp, meta.otlp_values, &oc, &otlp_url) == 1)
        cfg.otlp = &oc;

    code = proxy_run(&cfg, &err);
    store_hold_free(hold);
    free(spool);
    free(otlp_url);
    if (cfg.recorder_hold_fd >= 0)
        close(cfg.recorder_hold_fd);
    if (err.len > 0)
        launch_error("%s: %s", meta.provider, tftap_buf_cstr(&err));
    proxy_meta_done(&meta);
    tftap_buf_done(&err);
    return code;
}
