/* launch: one run per CLI command under `tftap wrap`, where no `tftap run`
 * is around the command: each shim joins the run of the command that
 * started it, and its recorder, leaving, redacts what it can tell is
 * sensitive (docs/running.md). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "common/common.h"
#include "launch/launch_int.h"
#include "store/store.h"

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
/* The command the shim joined (launch_wrap_join), kept for its recorder: the
 * run's recorded arguments lose their secrets at the first redaction, and
 * a recorder leaving later must still learn them. The run joined is held
 * (*hold) for the shim's life: its recorder holds it too once it has
 * written its first rows. */
static struct cli_proc joined;

int64_t launch_wrap_join(const char *db, store_hold **hold)
{
    struct cli_proc c;
    store *s = NULL;
    int64_t run_id = 0;
    pid_t parent = getppid();
    memset(&c, 0, sizeof c);
    /* An orphan's parent is init (or a subreaper): no command to join. */
    if (parent <= 1 || cli_proc_read(parent, &c) != 0) {
        cli_proc_done(&c);
        return 0;
    }
    int rc = store_open(db, STORE_OPEN_CREATE, &s);
    if (rc == 0)
        rc = store_run_join_held(s, tftap_buf_cstr(&c.key), c.argv[0], c.argc - 1,
                                 (const char *const *)c.argv + 1, c.cwd, c.name, &run_id, hold);
    if (rc != 0)
        run_id = 0; /* the recorder says what is wrong with the database */
    store_close(s);
    if (run_id > 0)
        joined = c; /* the process's whole life: never freed */
    else
        cli_proc_done(&c);
    return run_id;
}

/* The command's arguments as the run recorded them (runs.args). */
struct run_words {
    char *cwd;
    char **args; /* NULL-terminated */
    size_t n;
};

static int take_words(void *ctx, const store_run_row *row)
{
    struct run_words *w = ctx;
    sj_doc *d = NULL;
    w->cwd = row->cwd ? strdup(row->cwd) : NULL;
    if (row->args_json && sj_parse(row->args_json, strlen(row->args_json), 8, &d) == 0 &&
        sj_root(d)->kind == SJ_ARRAY) {
        w->args = calloc(sj_root(d)->n + 1, sizeof *w->args);
        for (const sj_node *a = sj_root(d)->child; w->args && a; a = a->next)
            if (a->kind == SJ_STRING && (w->args[w->n] = strdup(a->str)) != NULL)
                w->n++;
    }
    sj_free(d);
    return 0;
}

/* Under tftap wrap nothing of tftap sees the command end: each recorder,
 * its part written, redacts the run by what core marks as far as can be
 * told from here: the local state (its marks), the configuration's
 * sensitive variables with the values the command's arguments and this
 * environment (the CLI's, passed on to its providers) give them, and
 * copies of what the providers' schemas mark (docs/database.md). In the
 * recorder's process: stderr goes nowhere, problems cost the redaction. */
void launch_wrap_run_left(const char *db, int64_t run_id)
{
    extern char **environ;
    store *s = NULL;
    struct run_words w = {NULL, NULL, 0};
    if (store_open(db, 0, &s) != 0)
        return;
    if (store_run_get(s, run_id, take_words, &w) == 0 && w.cwd) {
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
        analysis_match_doc doc = {NULL, 0, 0, 0};
        size_t ndocs = 0;
        if (run_local_state(w.cwd, w.args, &state) == 0 && state.len > 0) {
            doc = (analysis_match_doc){state.data, state.len, 0, 0};
            ndocs = 1;
        }
        /* The file is rewritten by the last recorder out (the others still
         * write into it), for the copies its unused space may keep. */
        int64_t left = 1;
        (void)store_run_recorders(s, run_id, &left);
        (void)run_redact_secrets(s, run_id, w.cwd, w.args, environ, &doc, ndocs, left == 0);
        tftap_buf_done(&state);
    }
    for (size_t i = 0; i < w.n; i++)
        free(w.args[i]);
    free(w.args);
    free(w.cwd);
    store_close(s);
}
