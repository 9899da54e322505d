/* tftap run, after an apply that failed: the plan it made, made again.
 *
 * An apply without a plan file plans for itself and saves no plan; when a
 * create among instances of count or for_each fails, nothing after it
 * names which instance it was (the state after lacks the object). The
 * recording holds every answer the plan got: planned again offline, with
 * the recorded providers replaying them (tftap replay), from the state
 * before the apply, the same configuration and arguments, core makes the
 * same plan, and `show -json` of it names every instance it planned. A
 * call the recording cannot answer fails the plan, and then nothing is
 * taken from it. Nothing of the user's is written: the state before, the
 * plan and the replay's record go into a directory of our own, removed
 * after. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "launch/launch_int.h"
#include "store/store.h"

/* Remove dir's files and dir (one level: what the replay leaves). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        tftap_buf p = TFTAP_BUF_INIT;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            tftap_buf_reset(&p);
            tftap_buf_printf(&p, "%s/%s", dir, e->d_name);
            if (!tftap_buf_failed(&p))
                (void)unlink(tftap_buf_cstr(&p));
        }
        tftap_buf_done(&p);
        closedir(d);
    }
    (void)rmdir(dir);
}

static int write_private(const char *path, const tftap_buf *content)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < content->len) {
        ssize_t n = write(fd, content->data + off, content->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)n;
    }
    return close(fd);
}

/* Is the run one whose plan can be made again, and is it worth it? A
 * plan not saved that succeeded (0, or 2 of -detailed-exitcode), an apply
 * without a plan file that failed or only refreshed, a refresh, a
 * destroy: what they planned no document names (a refresh's and a
 * destroy's reads of data sources with count, say). */
static int replannable(const struct run_end *e, store *s)
{
    int plan = strcmp(e->sub, "plan") == 0 && e->planfile == NULL && (e->code == 0 || e->code == 2);
    int apply = strcmp(e->sub, "apply") == 0 && e->applied_plan == NULL &&
                (e->code != 0 || e->refresh_only);
    if (!(plan || apply || strcmp(e->sub, "refresh") == 0 || strcmp(e->sub, "destroy") == 0) ||
        !e->have_before || !e->is_cli)
        return 0;
    /* Helpers with an environment of their own (an acceptance test's
     * front; a replay's is only the CLI config of its providers, and its
     * recording answers as they did), providers the CLI reattaches to
     * (they would answer, not the recording), arguments only the command
     * or only a plan was given (a plan's own reach the plan made again
     * too): not the same plan. */
    tftap_buf var = TFTAP_BUF_INIT;
    tftap_buf_printf(&var, "TF_CLI_ARGS_%s", e->sub);
    int own_args = !plan && (tftap_buf_failed(&var) || getenv(tftap_buf_cstr(&var)) != NULL ||
                             getenv("TF_CLI_ARGS_plan") != NULL);
    tftap_buf_done(&var);
    if ((e->aux_env != NULL && !e->replayed) || getenv("TF_REATTACH_PROVIDERS") != NULL || own_args)
        return 0;
    /* A plan that writes a file of the user's besides its plan would write
     * it again. */
    for (size_t i = 0; e->args[i] != NULL; i++) {
        const char *a = e->args[i][0] == '-' && e->args[i][1] == '-' ? e->args[i] + 1 : e->args[i];
        if (strncmp(a, "-generate-config-out", 20) == 0)
            return 0;
    }
    /* The state before goes into a file of ours: only a local state the
     * defaults place, in clear (run_local_state). */
    tftap_buf st = TFTAP_BUF_INIT;
    int local = run_local_state(e->workdir, e->args, &st) == 0;
    tftap_buf_done(&st);
    if (!local)
        return 0;
    int repeatable = 0;
    return analysis_replay_repeatable(s, e->run_id, &repeatable) == 0 && repeatable;
}

/* The types (and modes) of the run's resource calls left unnamed. */
struct unnamed {
    tftap_buf types; /* "d" or "m", the type, NUL; one after the other */
};

static int on_name(void *ctx, const char *rpc, const char *type_name, const char *address)
{
    struct unnamed *u = ctx;
    if (address != NULL || type_name == NULL || rpc == NULL)
        return 0;
    int data = strcmp(rpc, "ReadDataSource") == 0;
    if (!data && strcmp(rpc, "PlanResourceChange") != 0 &&
        strcmp(rpc, "ApplyResourceChange") != 0 && strcmp(rpc, "ReadResource") != 0)
        return 0;
    tftap_buf_putc(&u->types, data ? 'd' : 'm');
    tftap_buf_puts(&u->types, type_name);
    tftap_buf_putc(&u->types, '\0');
    return tftap_buf_failed(&u->types) ? TFTAP_ENOMEM : 0;
}

static int unnamed_has(const struct unnamed *u, int data, const char *type)
{
    for (size_t i = 0; i < u->types.len; i += strlen(u->types.data + i) + 1)
        if (u->types.data[i] == (data ? 'd' : 'm') && strcmp(u->types.data + i + 1, type) == 0)
            return 1;
    return 0;
}

/* -target= arguments, one a line into targets: the configuration's blocks
 * (config, run_config_doc's document) of the types whose calls stayed
 * unnamed; a block inside a module by its module call at the root (a
 * target through a module with count or for_each must name an instance of
 * it, or all of them so). The plan made again covers those and what they
 * depend on: a plan of thousands of objects, a handful of them new, is
 * made again for the handful. 1 with targets, 0 when the whole plan is to
 * be made again (the configuration not read with certainty, or the
 * command targets for itself), -1 when no block is of such a type, or on
 * error. */
static int replan_targets(const struct run_end *e, store *s, const tftap_buf *config,
                          tftap_buf *targets)
{
    for (size_t i = 0; e->args[i] != NULL; i++) {
        const char *a = e->args[i][0] == '-' && e->args[i][1] == '-' ? e->args[i] + 1 : e->args[i];
        if (strncmp(a, "-target", 7) == 0 || strncmp(a, "-exclude", 8) == 0)
            return 0;
    }
    if (config == NULL || config->len == 0)
        return 0;
    struct unnamed u = {TFTAP_BUF_INIT};
    sj_doc *doc = NULL;
    int rc = -1, ok = store_run_names_each(s, e->run_id, on_name, &u) == 0 &&
                      sj_parse(config->data, config->len, 0, &doc) == 0;
    const sj_node *blocks = ok ? sj_get(sj_root(doc), "tftap_config") : NULL;
    for (const sj_node *b = blocks ? blocks->child : NULL; b != NULL; b = b->next) {
        const sj_node *addr = sj_get(b, "address"), *type = sj_get(b, "type"),
                      *mode = sj_get(b, "mode");
        if (!addr || addr->kind != SJ_STRING || !type || type->kind != SJ_STRING || !mode ||
            mode->kind != SJ_STRING || !unnamed_has(&u, strcmp(mode->str, "data") == 0, type->str))
            continue;
        size_t len = addr->len;
        if (strncmp(addr->str, "module.", 7) == 0)
            len = 7 + strcspn(addr->str + 7, ".");
        /* Once each (modules hold many blocks). */
        int seen = 0;
        for (size_t i = 0; i < targets->len && !seen; i += strcspn(targets->data + i, "\n") + 1)
            seen = strncmp(targets->data + i + 8, addr->str, len) == 0 &&
                   targets->data[i + 8 + len] == '\n';
        if (!seen)
            tftap_buf_printf(targets, "-target=%.*s\n", (int)len, addr->str);
        rc = 1;
    }
    if (tftap_buf_failed(targets))
        rc = -1;
    sj_free(doc);
    tftap_buf_done(&u.types);
    return rc;
}

size_t run_replay_argv(const struct run_end *e, char *self, char *run_id, char *claims, char **argv)
{
    size_t n = 0;
    argv[n++] = self;
    argv[n++] = "replay";
    argv[n++] = (char *)e->db;
    argv[n++] = "--run";
    argv[n++] = run_id;
    argv[n++] = "--no-record";
    if (claims != NULL) {
        argv[n++] = "--claims";
        argv[n++] = claims;
    }
    argv[n++] = "--";
    argv[n++] = (char *)e->cli_path;
    return n;
}

int run_replan(const struct run_end *e, store *s, const tftap_buf *config, tftap_buf *plan,
               tftap_buf *targets_out)
{
    tftap_buf_reset(targets_out);
    if (!replannable(e, s))
        return -1;
    tftap_buf targets = TFTAP_BUF_INIT;
    int targeted = replan_targets(e, s, config, &targets);
    if (targeted < 0) {
        tftap_buf_done(&targets);
        return -1;
    }
    /* "-target=ADDRESS\n" each: the addresses, for the matching. */
    for (size_t i = 0; i < targets.len; i += strcspn(targets.data + i, "\n") + 1)
        tftap_buf_printf(targets_out, "%.*s\n", (int)strcspn(targets.data + i + 8, "\n"),
                         targets.data + i + 8);
    size_t ntargets = 0;
    for (size_t i = 0; i < targets.len; i++)
        ntargets += targets.data[i] == '\n';
    const char *tmpdir = getenv("TMPDIR");
    tftap_buf t = TFTAP_BUF_INIT, state = TFTAP_BUF_INIT, out = TFTAP_BUF_INIT,
              statefile = TFTAP_BUF_INIT, planfile = TFTAP_BUF_INIT, runid = TFTAP_BUF_INIT,
              discard = TFTAP_BUF_INIT;
    char *dir = NULL, *self = launch_self_exe();
    char **argv = NULL;
    int rc = -1;
    tftap_buf_printf(&t, "%s/tftap-replan-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    tftap_buf_cstr(&t);
    if (self == NULL || tftap_buf_failed(&t) || (dir = tftap_buf_take(&t, NULL)) == NULL)
        goto done;
    if (mkdtemp(dir) == NULL) {
        free(dir);
        dir = NULL;
        goto done;
    }
    tftap_buf_printf(&statefile, "%s/before.tfstate", dir);
    tftap_buf_printf(&state, "-state=%s", tftap_buf_cstr(&statefile));
    tftap_buf_printf(&out, "-out=%s/plan", dir);
    tftap_buf_printf(&planfile, "%s/plan", dir);
    tftap_buf_printf(&runid, "%lld", (long long)e->run_id);
    if (tftap_buf_failed(&statefile) || tftap_buf_failed(&state) || tftap_buf_failed(&out) ||
        tftap_buf_failed(&planfile) || tftap_buf_failed(&runid))
        goto done;
    /* No state before is a state without resources: no file. */
    if (e->before->len > 0 && write_private(statefile.data, e->before) != 0)
        goto done;
    size_t nargs = 0;
    while (e->args[nargs] != NULL)
        nargs++;
    if ((argv = calloc(nargs + ntargets + 16, sizeof *argv)) == NULL)
        goto done;
    size_t n = run_replay_argv(e, self, runid.data, NULL, argv);
    /* The apply's arguments, planning: run in its -chdir directory, and
     * ours last (the last of a flag wins). */
    for (size_t i = 0; i < nargs; i++) {
        const char *a = e->args[i];
        const char *f = a[0] == '-' && a[1] == '-' ? a + 1 : a;
        if (strncmp(f, "-chdir=", 7) == 0 || strcmp(f, "-auto-approve") == 0 ||
            strncmp(f, "-auto-approve=", 14) == 0 || strcmp(f, "-detailed-exitcode") == 0 ||
            strncmp(f, "-detailed-exitcode=", 19) == 0)
            continue;
        argv[n++] = a == e->sub ? "plan" : (char *)a;
        if (a == e->sub && strcmp(a, "refresh") == 0)
            argv[n++] = "-refresh-only";
        else if (a == e->sub && strcmp(a, "destroy") == 0)
            argv[n++] = "-destroy";
    }
    argv[n++] = "-input=false";
    argv[n++] = "-lock=false";
    argv[n++] = out.data;
    argv[n++] = state.data;
    for (size_t i = 0; i < targets.len; i += strlen(targets.data + i) + 1) {
        targets.data[i + strcspn(targets.data + i, "\n")] = '\0';
        argv[n++] = targets.data + i;
    }
    argv[n] = NULL;
    if (capture(argv, NULL, e->workdir, 64u << 20, &discard) != 0)
        goto done;
    char *show[] = {(char *)e->cli_path, "show", "-json", planfile.data, NULL};
    tftap_buf_reset(plan);
    if (capture(show, NULL, e->workdir, CAPTURE_MAX, plan) == 0 && plan->len > 0 &&
        !tftap_buf_failed(plan))
        rc = 0;
done:
    if (rc != 0 || tftap_buf_failed(targets_out)) {
        tftap_buf_reset(plan);
        tftap_buf_reset(targets_out);
        rc = -1;
    }
    if (dir != NULL)
        remove_dir(dir);
    free(dir);
    free(self);
    free(argv);
    tftap_buf_done(&t);
    tftap_buf_done(&state);
    tftap_buf_done(&statefile);
    tftap_buf_done(&out);
    tftap_buf_done(&planfile);
    tftap_buf_done(&runid);
    tftap_buf_done(&discard);
    tftap_buf_done(&targets);
    return rc;
}
