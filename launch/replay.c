/* tftap replay SOURCE -- tofu|terraform ARGS...: run a command with every
 * provider of a recorded run replaced by the recording itself.
 *
 * Each recorded provider gets an executable that execs `tftap
 * replay-provider` (replay/server.c) for it; those stand in for the real
 * providers, and the command runs exactly as under `tftap run` with them:
 * behind the usual shims, so that the replay is recorded as a run of its
 * own (`tftap diff ORIGINAL REPLAY`). No real provider is found, started or
 * needed. With --out DIR the same files are written for later commands,
 * as `tftap wrap` does. Without a command, the run is an acceptance test's
 * step run, whose own command runs again in its kept working directory
 * (replay_step.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_store.h"
#include "cli/replay_int.h"
#include "launch/launch.h"
#include "store/store.h"

static const char usage_text[] =
    "usage: tftap replay RUN|SOURCE[:RUN] [--run RUN] [--ignore PATTERN]... [--db PATH]\n"
    "                    [--record-sensitive] [--keep-raw] [--no-match]\n"
    "                    -- tofu|terraform ARGS...\n"
    "       tftap replay RUN|SOURCE[:RUN] [--run RUN] [--ignore PATTERN]... [--db PATH]\n"
    "                    [--cli tofu|terraform] --out DIR\n"
    "       tftap replay STEP_RUN|SOURCE[:STEP_RUN] [--dir DIR] [--cli CLI]\n"
    "                    [--ignore PATTERN]... [--db PATH] [--record-sensitive]\n"
    "                    [--keep-raw] [--no-match]\n\n"
    "Run an OpenTofu/Terraform command with every provider of a recorded run\n"
    "answered from the recording: no real provider is installed, started or\n"
    "needed. RUN (a run id or 'last') is a run of the database (--db), as for every\n"
    "other command; SOURCE is a database or a bundle, RUN then one of its runs ('last',\n"
    "the default). Each call is answered by the recorded call of the same method and\n"
    "type whose request values are equal (secrets and provider-private bytes\n"
    "aside); a call nothing matches fails with an error diagnostic naming the\n"
    "nearest recorded request and the paths where they differ. The replay is\n"
    "recorded like 'tftap run' records (into --db), so that 'tftap diff' can\n"
    "compare it with the original; exits with the command's exit code.\n\n"
    "Without a command, RUN is an acceptance test's step run (tftap run -- go test):\n"
    "its working directory as the command found it (configuration, state, lock\n"
    "file, saved plan) is laid out again in --dir DIR or a temporary directory,\n"
    "and the step's own command runs there against the recorded providers,\n"
    "printing the CLI's output; it exits as the recorded step did when the\n"
    "recording answers every call. The configuration comes from the record: replay\n"
    "the steps of records you trust.\n\n"
    "  --run RUN            the recorded run to replay (default: last)\n"
    "  --ignore PATTERN     request paths whose values may differ (a glob on\n"
    "                       attribute paths, as tftap diff --ignore); repeatable\n"
    "  --db PATH            database the replay is recorded into (default:\n"
    "                       $TFTAP_DB, else ./" STORE_DEFAULT_PATH ")\n"
    "  --record-sensitive   store sensitive values instead of redacting them\n"
    "  --keep-raw           store raw message bytes too\n"
    "  --no-match           do not run 'show -json' after plan/apply to tie calls\n"
    "                       to resource addresses\n"
    "  --out DIR            write the replaying providers, shims and a CLI config\n"
    "                       (DIR/tftap.tfrc) into DIR and print the export line,\n"
    "                       as tftap wrap does, instead of running a command\n"
    "  --cli NAME           with --out: whose CLI config to keep (tofu); for a step:\n"
    "                       the CLI to run, a name on PATH or a path (default: the\n"
    "                       recorded one, when it is here and named tofu or\n"
    "                       terraform, else its name on PATH)\n"
    "  --dir DIR            without a command: lay the step's directory out in DIR\n"
    "                       (new or empty; kept afterwards) instead of a temporary\n"
    "                       one\n\n"
    "Exit status: the command's; 1 when the replay could not be set up, 2 usage.\n";

static int add_recorded(void *ctx, const store_run_provider_row *row)
{
    struct recorded *r = ctx;
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

static void recorded_done(struct recorded *r)
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

/* A URI's ":RUN" suffix: a run id or "last" after the last colon, which
 * comes after the URI's authority (a colon there is a port's). */
static int uri_run_suffix(const char *arg, const char *colon)
{
    const char *auth = strstr(arg, "://");
    const char *path = auth ? strchr(auth + 3, '/') : NULL;
    if (path == NULL || colon < path)
        return 0;
    if (strcmp(colon + 1, "last") == 0)
        return 1;
    for (const char *p = colon + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return colon[1] != '\0';
}

/* SOURCE[:RUN]: a path that exists is a path, colons and all. */
static int split_source(const char *arg, char **path, const char **run)
{
    struct stat st;
    const char *colon = strrchr(arg, ':');
    *run = NULL;
    if (colon != NULL && store_path_is_url(arg) && !uri_run_suffix(arg, colon))
        colon = NULL;
    if (colon != NULL && stat(arg, &st) != 0 && colon[1] != '\0') {
        *path = strndup(arg, (size_t)(colon - arg));
        *run = colon + 1;
    } else {
        *path = strdup(arg);
    }
    return *path ? 0 : TFTAP_ENOMEM;
}

/* Write dir/p<i>/terraform-provider-<type> for every provider: a script
 * that execs `tftap replay-provider` for it; binary is set to its path. */
static int write_providers(struct recorded *r, const char *dir, const struct source *src)
{
    tftap_buf b = TFTAP_BUF_INIT, name = TFTAP_BUF_INIT;
    int rc = 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        cli_error("cannot create %s: %s", dir, strerror(errno));
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
            cli_error("cannot create %s: %s", name.data, strerror(errno));
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
            cli_error("cannot write %s: %s", name.data, strerror(errno));
            rc = TFTAP_EIO;
            break;
        }
        free(p->binary);
        if ((p->binary = tftap_buf_take(&name, NULL)) == NULL)
            rc = TFTAP_ENOMEM;
    }
    if (rc == TFTAP_ENOMEM)
        cli_error("out of memory");
    tftap_buf_done(&b);
    tftap_buf_done(&name);
    return rc;
}

/* Remove what write_providers and launch_wrap_write_config wrote in dir, and dir. */
static void clean_providers(const struct recorded *r, const char *dir)
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
static int read_source(const char *path, const char *run_spec, int64_t *run, struct recorded *r)
{
    store *s = NULL;
    int rc = store_open(path, STORE_OPEN_READONLY, &s);
    if (rc != 0 && store_path_is_url(path)) {
        cli_store_open_failed(path, STORE_OPEN_READONLY, rc);
        return 1;
    }
    if (rc != 0) {
        cli_error("cannot open %s: %s", path,
                  rc == TFTAP_ENOTFOUND ? "no such file"
                  : s                   ? store_errmsg(s)
                                        : tftap_strerror(rc));
        store_close(s);
        return 1;
    }
    if (cli_bundle_intact(s, path)) {
        store_close(s);
        return 1;
    }
    const char *shown = STORE_SHOWN(path);
    rc = store_resolve_run(s, run_spec, run);
    if (rc != 0) {
        cli_error("%s: no run '%s'%s", shown, run_spec,
                  rc == TFTAP_EINVAL ? " (a run id or 'last')" : "");
        store_close(s);
        return 1;
    }
    rc = store_run_providers_each(s, *run, add_recorded, r);
    if (rc != 0) {
        cli_error("cannot read the providers of run %lld of %s: %s", (long long)*run, shown,
                  rc == TFTAP_ENOMEM ? "out of memory" : store_errmsg(s));
        store_close(s);
        return 1;
    }
    for (size_t i = 0; i < r->n; i++) {
        tftap_buf raw = TFTAP_BUF_INIT;
        int proto = 0;
        if (!type_ok(r->v[i].type) || !addr_ok(r->v[i].addr)) {
            /* Quoted: the error stays one line whatever the address holds. */
            tftap_buf_json_string(&raw, r->v[i].addr, strlen(r->v[i].addr));
            cli_error("run %lld of %s: provider address %s is not one a CLI accepts",
                      (long long)*run, shown, tftap_buf_cstr(&raw));
            rc = 1;
        } else if (store_run_provider_schema(s, *run, r->v[i].addr, &proto, &raw, NULL) != 0) {
            cli_error("run %lld of %s recorded no schema of %s: it cannot be replayed",
                      (long long)*run, shown, r->v[i].addr);
            rc = 1;
        }
        tftap_buf_done(&raw);
        if (rc)
            break;
    }
    store_close(s);
    if (rc == 0 && r->n == 0) {
        cli_error("run %lld of %s has no provider calls: nothing to replay", (long long)*run,
                  shown);
        rc = 1;
    }
    return rc;
}

/* --out DIR: the replaying providers in DIR/replay, shims in front of them
 * and DIR/tftap.tfrc. */
static int write_out(struct recorded *r, const char *out, const char *cli, const char *db,
                     const struct source *src, const struct launch_wrap_opts *wo)
{
    struct launch_providers set;
    tftap_buf err = TFTAP_BUF_INIT;
    char *dir = NULL, *rdir = NULL, *cwd = NULL, *config = NULL;
    int code = 1;
    memset(&set, 0, sizeof set);
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
        cli_error("cannot create %s: %s", out, strerror(errno));
        goto cleanup;
    }
    if ((dir = realpath(out, NULL)) == NULL || (cwd = getcwd(NULL, 0)) == NULL) {
        cli_error("cannot resolve %s: %s", out, strerror(errno));
        goto cleanup;
    }
    if ((rdir = launch_joinpath(dir, "replay")) == NULL) {
        cli_error("out of memory");
        goto cleanup;
    }
    if (write_providers(r, rdir, src) != 0)
        goto cleanup;
    if (launch_discover(cwd, cli, &set, &err) != 0) {
        cli_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    if (launch_providers_replace(&set, r->v, r->n) != 0) {
        cli_error("out of memory");
        goto cleanup;
    }
    struct launch_wrap_opts o = *wo;
    o.db = db;
    if (launch_wrap_write(&set, dir, &o, &config, &err) != 0) {
        cli_error("%s", tftap_buf_cstr(&err));
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

/* The command: a temporary directory with the replaying providers and a CLI
 * config sending the CLI straight to them (for the `show -json` tftap runs
 * itself after the command, unrecorded), then launch_run. */
int replay_command(struct recorded *r, char **cmd, int ncmd, const struct source *src,
                   struct launch_run_opts *ro)
{
    struct launch_providers set;
    tftap_buf err = TFTAP_BUF_INIT, e = TFTAP_BUF_INIT;
    char *tmp = NULL, *rdir = NULL, *config = NULL, *env_cfg = NULL;
    int code = 1;
    memset(&set, 0, sizeof set);
    if ((tmp = launch_tempdir("replay")) == NULL) {
        cli_error("cannot create a temporary directory: %s", strerror(errno));
        goto cleanup;
    }
    if ((rdir = launch_joinpath(tmp, "replay")) == NULL) {
        cli_error("out of memory");
        goto cleanup;
    }
    if (write_providers(r, rdir, src) != 0)
        goto cleanup;
    const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
    if (launch_discover(".", strstr(base, "terraform") ? "terraform" : "tofu", &set, &err) != 0) {
        cli_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    if (launch_providers_replace(&set, r->v, r->n) != 0 ||
        launch_wrap_write_config(&set, rdir, &config, &err) != 0) {
        cli_error("%s", err.len ? tftap_buf_cstr(&err) : "out of memory");
        goto cleanup;
    }
    tftap_buf_puts(&e, "TF_CLI_CONFIG_FILE=");
    tftap_buf_puts(&e, config);
    tftap_buf_cstr(&e);
    if (tftap_buf_failed(&e) || (env_cfg = tftap_buf_take(&e, NULL)) == NULL) {
        cli_error("out of memory");
        goto cleanup;
    }
    char *aux[1] = {env_cfg};
    ro->providers = r->v;
    ro->nproviders = r->n;
    ro->aux_env = aux;
    ro->naux_env = 1;
    code = launch_run(cmd, ncmd, ro);
cleanup:
    if (rdir != NULL)
        clean_providers(r, rdir);
    if (tmp != NULL && rmdir(tmp) != 0)
        cli_error("could not remove %s: %s", tmp, strerror(errno));
    launch_providers_done(&set);
    tftap_buf_done(&err);
    tftap_buf_done(&e);
    free(tmp);
    free(rdir);
    free(config);
    free(env_cfg);
    return code;
}

int cli_replay(int argc, char **argv)
{
    enum {
        OPT_DB = 256,
        OPT_RUN,
        OPT_IGNORE,
        OPT_OUT,
        OPT_CLI,
        OPT_SENSITIVE,
        OPT_RAW,
        OPT_NO_MATCH,
        OPT_DIR,
    };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"run", required_argument, NULL, OPT_RUN},
        {"ignore", required_argument, NULL, OPT_IGNORE},
        {"out", required_argument, NULL, OPT_OUT},
        {"cli", required_argument, NULL, OPT_CLI},
        {"record-sensitive", no_argument, NULL, OPT_SENSITIVE},
        {"keep-raw", no_argument, NULL, OPT_RAW},
        {"no-match", no_argument, NULL, OPT_NO_MATCH},
        {"dir", required_argument, NULL, OPT_DIR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct launch_run_opts ro = {0};
    struct launch_wrap_opts wo = {0};
    struct recorded rec = {0};
    const char *run_opt = NULL, *out = NULL, *dir = NULL, *cli = NULL, *source_arg = NULL,
               *run_spec;
    char *source = NULL, *exe = NULL, *db = NULL;
    int code = 2;
    const char **ignore = calloc((size_t)argc + 1, sizeof *ignore);
    size_t nignore = 0;
    if (ignore == NULL) {
        cli_error("out of memory");
        return 1;
    }
    /* Our options end at "--": what follows is the command's. */
    int nours = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            nours = i;
            break;
        }
    int opt;
    optind = 0;
    while ((opt = cli_getopt(nours, argv, "h", longopts)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage_text, stdout);
            code = 0;
            goto cleanup;
        case OPT_DB:
            ro.db = optarg;
            break;
        case OPT_RUN:
            run_opt = optarg;
            break;
        case OPT_IGNORE:
            ignore[nignore++] = optarg;
            break;
        case OPT_OUT:
            out = optarg;
            break;
        case OPT_CLI:
            cli = optarg;
            break;
        case OPT_SENSITIVE:
            ro.record_sensitive = wo.record_sensitive = 1;
            break;
        case OPT_RAW:
            ro.keep_raw = wo.keep_raw = 1;
            break;
        case OPT_NO_MATCH:
            ro.no_match = 1;
            break;
        case OPT_DIR:
            dir = optarg;
            break;
        default:
            goto cleanup;
        }
    }
    for (int i = optind; i < nours; i++) {
        if (source_arg != NULL) {
            cli_usage_error("replay", "unexpected argument '%s' (the command goes after --)",
                            argv[i]);
            goto cleanup;
        }
        source_arg = argv[i];
    }
    char **cmd = nours < argc ? argv + nours + 1 : NULL;
    int ncmd = nours < argc ? argc - nours - 1 : 0;
    if (source_arg == NULL) {
        cli_usage_error("replay", "no SOURCE given (a database or bundle)");
        goto cleanup;
    }
    if (out != NULL && ncmd > 0) {
        cli_usage_error("replay", "--out DIR writes files for later commands: give no command");
        goto cleanup;
    }
    if (dir != NULL && (out != NULL || ncmd > 0)) {
        cli_usage_error("replay", "--dir DIR is where a step's directory is laid out: give no "
                                  "command and no --out");
        goto cleanup;
    }
    if (cli != NULL && ncmd > 0) {
        cli_usage_error("replay", "--cli is for --out or a step's replay: the command names its "
                                  "CLI");
        goto cleanup;
    }
    /* A step's replay runs the CLI --cli names (a path too); --out keeps
     * the config of one of the two. */
    if (out != NULL && cli != NULL && strcmp(cli, "tofu") != 0 && strcmp(cli, "terraform") != 0) {
        cli_usage_error("replay", "--cli must be tofu or terraform, not '%s'", cli);
        goto cleanup;
    }
    code = 1;
    const char *db_path = launch_db_path(ro.db);
    /* RUN alone, as every other command takes it: a run of the database
     * (--db), when no file has that name. */
    struct stat sst;
    int run_alone = cli_is_run_spec(source_arg) && stat(source_arg, &sst) != 0;
    if (run_alone) {
        source = strdup(db_path);
        run_spec = source_arg;
    }
    if (run_alone ? source == NULL : split_source(source_arg, &source, &run_spec) != 0) {
        cli_error("out of memory");
        goto cleanup;
    }
    if (run_opt != NULL && run_spec != NULL && strcmp(run_opt, run_spec) != 0) {
        cli_usage_error("replay", "two runs given: %s and --run %s", STORE_SHOWN(source_arg),
                        run_opt);
        code = 2;
        goto cleanup;
    }
    if (run_spec == NULL)
        run_spec = run_opt ? run_opt : "last";

    struct source src = {0};
    if ((exe = launch_self_exe()) == NULL || (db = launch_abspath(db_path)) == NULL) {
        cli_error("cannot find this program's path: %s", strerror(errno));
        goto cleanup;
    }
    src.exe = exe;
    char *abs = launch_abspath(source);
    if (abs == NULL) {
        cli_error("cannot resolve %s: %s", source, strerror(errno));
        goto cleanup;
    }
    free(source);
    source = abs;
    src.path = source;
    src.ignore = ignore;
    src.nignore = nignore;
    /* The run is resolved now: a replay recorded into the same database
     * becomes its last run. */
    if (read_source(source, run_spec, &src.run, &rec) != 0)
        goto cleanup;
    wo.tftap_exe = exe;
    if (out != NULL)
        code = write_out(&rec, out, cli ? cli : "tofu", db, &src, &wo);
    else if (ncmd == 0)
        code = replay_step(&rec, &src, dir, cli, &ro);
    else
        code = replay_command(&rec, cmd, ncmd, &src, &ro);
cleanup:
    recorded_done(&rec);
    free(ignore);
    free(source);
    free(exe);
    free(db);
    return code;
}
