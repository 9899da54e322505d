/* launch: a recorded run answering for its providers (tftap replay).
 *
 * Each recorded provider gets an executable that execs `tftap
 * replay-provider` (replay/server.c) for it; those stand in for the real
 * providers, and the command runs exactly as under `tftap run` with them:
 * behind the usual shims, so that the replay is recorded as a run of its
 * own (`tftap diff ORIGINAL REPLAY`). No real provider is found, started or
 * needed. launch_replay_out writes the same files for later commands, as
 * `tftap wrap` does. An acceptance test's step run has its own command run
 * again in its kept working directory (launch_replay_step.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "store/store.h"

static int add_recorded(void *ctx, const store_run_provider_row *row)
{
    struct launch_recorded *r = ctx;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 4;
        struct launch_provider *v = realloc(r->v, cap * sizeof *v);
        if (v == NULL)
            return TFTAP_ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    struct launch_provider *p = &r->v[r->n];
    memset(p, 0, sizeof *p);
    const char *slash = strrchr(row->provider, '/');
    p->addr = strdup(row->provider);
    p->type = strdup(slash ? slash + 1 : row->provider);
    p->version = row->version ? strdup(row->version) : NULL;
    r->n++;
    if (p->addr == NULL || p->type == NULL || (row->version && p->version == NULL))
        return TFTAP_ENOMEM;
    return 0;
}

void launch_recorded_done(struct launch_recorded *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].addr);
        free(r->v[i].type);
        free(r->v[i].version);
        free(r->v[i].binary);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* A provider type becomes part of a file name: only what the CLI itself
 * accepts in one. */
static int type_ok(const char *t)
{
    if (t[0] == '\0' || strlen(t) > 200)
        return 0;
    for (const char *c = t; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_'))
            return 0;
    return 1;
}

/* The whole address goes into the scripts' comment lines, the shims and the
 * CLI config: from a bundle someone else made, a newline in it would turn
 * the rest into shell commands. Only what a provider source address can
 * hold (a hostname, IDN bytes and a port included) passes. */
static int addr_ok(const char *a)
{
    size_t seg = 0;
    for (const unsigned char *c = (const unsigned char *)a;; c++) {
        if (*c == '/' || *c == '\0') {
            if (seg == 0)
                return 0;
            if (*c == '\0')
                return 1;
            seg = 0;
            continue;
        }
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.' || *c == ':' || *c >= 0x80))
            return 0;
        seg++;
    }
}

/* Write dir/p<i>/terraform-provider-<type> for every provider: a script
 * that execs `tftap replay-provider` for it; binary is set to its path.
 * claims: the directory the processes of one command share (dir/claims,
 * made here), or 0: none (--out: its files serve command after command,
 * each a replay of its own). */
static int write_providers(struct launch_recorded *r, const char *dir,
                           const struct launch_source *src, int claims)
{
    tftap_buf b = TFTAP_BUF_INIT, name = TFTAP_BUF_INIT;
    int rc = 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        launch_error("cannot create %s: %s", dir, strerror(errno));
        return TFTAP_EIO;
    }
    char *claims_dir = !claims       ? NULL
                       : src->claims ? strdup(src->claims)
                                     : launch_joinpath(dir, "claims");
    if (claims && claims_dir == NULL) {
        launch_error("out of memory");
        return TFTAP_ENOMEM;
    }
    if (src->claims != NULL && claims && !launch_claims_empty(src->claims)) {
        /* Another replay's claims would pass calls over. */
        launch_error("--claims %s: the directory is not empty (it holds another replay's claims?)",
                     src->claims);
        free(claims_dir);
        return TFTAP_EINVAL;
    }
    if (claims_dir != NULL && mkdir(claims_dir, 0700) != 0 && errno != EEXIST) {
        launch_error("cannot create %s: %s", claims_dir, strerror(errno));
        free(claims_dir);
        return TFTAP_EIO;
    }
    for (size_t i = 0; i < r->n && rc == 0; i++) {
        struct launch_provider *p = &r->v[i];
        tftap_buf_reset(&name);
        tftap_buf_printf(&name, "%s/p%zu", dir, i);
        if (tftap_buf_failed(&name)) {
            rc = TFTAP_ENOMEM;
            break;
        }
        if (mkdir(tftap_buf_cstr(&name), 0700) != 0 && errno != EEXIST) {
            launch_error("cannot create %s: %s", name.data, strerror(errno));
            rc = TFTAP_EIO;
            break;
        }
        tftap_buf_printf(&name, "/terraform-provider-%s", p->type);
        tftap_buf_reset(&b);
        tftap_buf_puts(&b, "#!/bin/sh\n# tftap replay of ");
        tftap_buf_puts(&b, p->addr);
        tftap_buf_printf(&b, " (run %lld of ", (long long)src->run);
        tftap_buf_puts(&b, src->path);
        tftap_buf_puts(&b, ")\nexec ");
        launch_sh_quote(&b, src->exe);
        tftap_buf_puts(&b, " replay-provider --db ");
        launch_sh_quote(&b, src->path);
        tftap_buf_printf(&b, " --run %lld --provider ", (long long)src->run);
        launch_sh_quote(&b, p->addr);
        for (size_t k = 0; k < src->nignore; k++) {
            tftap_buf_puts(&b, " --ignore ");
            launch_sh_quote(&b, src->ignore[k]);
        }
        if (claims_dir != NULL) {
            tftap_buf_puts(&b, " --claims ");
            launch_sh_quote(&b, claims_dir);
        }
        tftap_buf_puts(&b, " \"$@\"\n");
        if (tftap_buf_failed(&b) || tftap_buf_failed(&name)) {
            rc = TFTAP_ENOMEM;
            break;
        }
        FILE *f = fopen(tftap_buf_cstr(&name), "w");
        int bad = f == NULL;
        if (f != NULL) {
            bad = fwrite(b.data, 1, b.len, f) != b.len || fchmod(fileno(f), 0700) != 0;
            bad |= fclose(f) != 0;
        }
        if (bad) {
            launch_error("cannot write %s: %s", name.data, strerror(errno));
            rc = TFTAP_EIO;
            break;
        }
        free(p->binary);
        if ((p->binary = tftap_buf_take(&name, NULL)) == NULL)
            rc = TFTAP_ENOMEM;
    }
    if (rc == TFTAP_ENOMEM)
        launch_error("out of memory");
    tftap_buf_done(&b);
    tftap_buf_done(&name);
    free(claims_dir);
    return rc;
}

/* The claims after the command: whether the replay went out of step with
 * the recording (said); dir/claims, the replay's own, removed (--claims
 * DIR stays for the caller). */
static void finish_claims(const char *dir, const struct launch_source *src, int ran)
{
    char *claims = src->claims ? NULL : launch_joinpath(dir, "claims");
    int out = claims ? launch_claims_finish(claims) : launch_claims_out_of_step(src->claims);
    if (out && ran)
        launch_error("%s", LAUNCH_REPLAY_OUT_OF_STEP);
    free(claims);
}

/* Remove what write_providers and launch_wrap_write_config wrote in dir, and dir. */
static void clean_providers(const struct launch_recorded *r, const char *dir)
{
    struct launch_providers set;
    memset(&set, 0, sizeof set);
    set.v = r->v;
    /* Those written so far: the binary is set once its file is. */
    while (set.n < r->n && r->v[set.n].binary != NULL)
        set.n++;
    /* launch_wrap_clean removes p<i>/<the binary's name> and tftap.tfrc. */
    launch_wrap_clean(&set, dir);
    rmdir(dir);
}

/* Read the run's providers from SOURCE. 0, or 1 after one error line. */
int launch_replay_read(store *s, int64_t run_id, const char *shown, struct launch_recorded *r)
{
    int rc = store_run_providers_each(s, run_id, add_recorded, r);
    if (rc != 0) {
        launch_error("cannot read the providers of run %lld of %s: %s", (long long)run_id, shown,
                     rc == TFTAP_ENOMEM ? "out of memory" : store_errmsg(s));
        return 1;
    }
    for (size_t i = 0; i < r->n; i++) {
        tftap_buf raw = TFTAP_BUF_INIT;
        int proto = 0;
        if (!type_ok(r->v[i].type) || !addr_ok(r->v[i].addr)) {
            /* Quoted: the error stays one line whatever the address holds. */
            tftap_buf_json_string(&raw, r->v[i].addr, strlen(r->v[i].addr));
            launch_error("run %lld of %s: provider address %s is not one a CLI accepts",
                         (long long)run_id, shown, tftap_buf_cstr(&raw));
            rc = 1;
        } else if (store_run_provider_schema(s, run_id, r->v[i].addr, &proto, &raw, NULL) != 0) {
            launch_error("run %lld of %s recorded no schema of %s: it cannot be replayed",
                         (long long)run_id, shown, r->v[i].addr);
            rc = 1;
        }
        tftap_buf_done(&raw);
        if (rc)
            break;
    }
    if (rc == 0 && r->n == 0) {
        launch_error("run %lld of %s has no provider calls: nothing to replay", (long long)run_id,
                     shown);
        rc = 1;
    }
    return rc;
}

/* --out DIR: the replaying providers in DIR/replay, shims in front of them
 * and DIR/tftap.tfrc. */
int launch_replay_out(struct launch_recorded *r, const char *out, const char *cli, const char *db,
                      const struct launch_source *src, const struct launch_wrap_opts *wo)
{
    struct launch_providers set;
    tftap_buf err = TFTAP_BUF_INIT;
    char *dir = NULL, *rdir = NULL, *cwd = NULL, *config = NULL;
    int code = 1;
    memset(&set, 0, sizeof set);
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
        launch_error("cannot create %s: %s", out, strerror(errno));
        goto cleanup;
    }
    if ((dir = realpath(out, NULL)) == NULL || (cwd = getcwd(NULL, 0)) == NULL) {
        launch_error("cannot resolve %s: %s", out, strerror(errno));
        goto cleanup;
    }
    if ((rdir = launch_joinpath(dir, "replay")) == NULL) {
        launch_error("out of memory");
        goto cleanup;
    }
    if (write_providers(r, rdir, src, 0) != 0)
        goto cleanup;
    if (launch_discover(cwd, cli, &set, &err) != 0) {
        launch_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    if (launch_providers_replace(&set, r->v, r->n) != 0) {
        launch_error("out of memory");
        goto cleanup;
    }
    struct launch_wrap_opts o = *wo;
    o.db = db;
    if (launch_wrap_write(&set, dir, &o, &config, &err) != 0) {
        launch_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    tftap_buf q = TFTAP_BUF_INIT;
    launch_sh_quote(&q, config);
    printf("export TF_CLI_CONFIG_FILE=%s\n", tftap_buf_cstr(&q));
    tftap_buf_done(&q);
    for (size_t i = 0; i < r->n; i++)
        fprintf(stderr, "tftap: replaying %s %s from run %lld of %s\n", r->v[i].addr,
                r->v[i].version ? r->v[i].version : "(no version)", (long long)src->run, src->path);
    code = fflush(stdout) == 0 ? 0 : 1;
cleanup:
    launch_providers_done(&set);
    tftap_buf_done(&err);
    free(dir);
    free(rdir);
    free(cwd);
    free(config);
    return code;
}

/* cmd with TF_CLI_CONFIG_FILE=config (env_cfg) added to our environment,
 * its stdio ours; its exit code as launch_run gives it, or 1 after one
 * error line. */
static int run_unrecorded(char **cmd, char *env_cfg)
{
    char **env = run_env_with(&env_cfg, 1);
    if (env == NULL) {
        launch_error("out of memory");
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execvpe(cmd[0], cmd, env);
        fprintf(stderr, "tftap: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    free(env);
    if (pid < 0) {
        launch_error("cannot start %s: %s", cmd[0], strerror(errno));
        return 1;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            launch_error("cannot wait for %s: %s", cmd[0], strerror(errno));
            return 1;
        }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The command: a temporary directory with the replaying providers and a CLI
 * config sending the CLI straight to them (for the `show -json` tftap runs
 * itself after the command, unrecorded), then launch_run (or, record 0, the
 * command alone). */
int launch_replay(struct launch_recorded *r, char **cmd, int ncmd, const struct launch_source *src,
                  struct launch_run_opts *ro, int record)
{
    struct launch_providers set;
    tftap_buf err = TFTAP_BUF_INIT, e = TFTAP_BUF_INIT;
    char *tmp = NULL, *rdir = NULL, *config = NULL, *env_cfg = NULL;
    int code = 1, ran = 0;
    memset(&set, 0, sizeof set);
    if ((tmp = launch_tempdir("replay")) == NULL) {
        launch_error("cannot create a temporary directory: %s", strerror(errno));
        goto cleanup;
    }
    if ((rdir = launch_joinpath(tmp, "replay")) == NULL) {
        launch_error("out of memory");
        goto cleanup;
    }
    if (write_providers(r, rdir, src, 1) != 0)
        goto cleanup;
    const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
    if (launch_discover(".", strstr(base, "terraform") ? "terraform" : "tofu", &set, &err) != 0) {
        launch_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    if (launch_providers_replace(&set, r->v, r->n) != 0 ||
        launch_wrap_write_config(&set, rdir, &config, &err) != 0) {
        launch_error("%s", err.len ? tftap_buf_cstr(&err) : "out of memory");
        goto cleanup;
    }
    tftap_buf_puts(&e, "TF_CLI_CONFIG_FILE=");
    tftap_buf_puts(&e, config);
    tftap_buf_cstr(&e);
    if (tftap_buf_failed(&e) || (env_cfg = tftap_buf_take(&e, NULL)) == NULL) {
        launch_error("out of memory");
        goto cleanup;
    }
    ran = 1;
    if (!record) {
        code = run_unrecorded(cmd, env_cfg);
        goto cleanup;
    }
    char *aux[1] = {env_cfg};
    ro->providers = r->v;
    ro->nproviders = r->n;
    ro->aux_env = aux;
    ro->naux_env = 1;
    code = launch_run(cmd, ncmd, ro);
cleanup:
    if (rdir != NULL) {
        finish_claims(rdir, src, ran);
        clean_providers(r, rdir);
    }
    if (tmp != NULL && rmdir(tmp) != 0)
        launch_error("could not remove %s: %s", tmp, strerror(errno));
    launch_providers_done(&set);
    tftap_buf_done(&err);
    tftap_buf_done(&e);
    free(tmp);
    free(rdir);
    free(config);
    free(env_cfg);
    return code;
}
