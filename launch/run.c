/* launch: `tftap run`'s work once its options are read: one CLI command with every
 * provider it uses wrapped by a shim, as one recorded run.
 *
 * The command stays attached to the user's terminal and in tftap's process
 * group; tftap only waits, passes on the signals sent to it alone (those
 * sent to the group reach the command already: run_signal.c), records the
 * exit code and exits with it. */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "store/store.h"

/* What the command line says: the subcommand, -chdir and a plan's -out. */
struct cmdline {
    const char *sub;   /* "plan", "apply", ... or NULL */
    const char *sub2;  /* the word after it ("providers lock"), or NULL */
    const char *chdir; /* -chdir=DIR or NULL */
    const char *out;   /* plan -out=FILE or NULL */
    const char *plan;  /* apply PLANFILE: its last operand, or NULL */
    int refresh_only;  /* refresh, or -refresh-only: nothing planned is applied */
};

/* Commands that install providers run unwrapped: with dev_overrides in
 * force the CLI skips installing (and upgrading, and locking) the overridden
 * providers, and warns that init may fail. None of them calls a provider,
 * so nothing is lost from the record. */
static int installs_providers(const struct cmdline *c)
{
    if (c->sub == NULL)
        return 0;
    if (strcmp(c->sub, "init") == 0 || strcmp(c->sub, "get") == 0)
        return 1;
    return strcmp(c->sub, "providers") == 0 && c->sub2 != NULL &&
           (strcmp(c->sub2, "lock") == 0 || strcmp(c->sub2, "mirror") == 0);
}

static void parse_cmdline(int argc, char **argv, struct cmdline *c)
{
    memset(c, 0, sizeof *c);
    int i = 1;
    for (; i < argc; i++) {
        if (strncmp(argv[i], "-chdir=", 7) == 0 || strncmp(argv[i], "--chdir=", 8) == 0) {
            c->chdir = strchr(argv[i], '=') + 1;
        } else if (argv[i][0] != '-') {
            c->sub = argv[i];
            if (i + 1 < argc && argv[i + 1][0] != '-')
                c->sub2 = argv[i + 1];
            break;
        }
    }
    for (int j = i + 1; c->sub != NULL && j < argc; j++)
        if (strcmp(argv[j], "-refresh-only") == 0 || strcmp(argv[j], "--refresh-only") == 0 ||
            strcmp(argv[j], "-refresh-only=true") == 0)
            c->refresh_only = 1;
    if (c->sub != NULL && strcmp(c->sub, "refresh") == 0)
        c->refresh_only = 1;
    /* apply PLANFILE: the last word, when no option (a saved plan is a
     * file of its own; launch_run checks that it is one). */
    if (c->sub != NULL && strcmp(c->sub, "apply") == 0 && i + 1 < argc && argv[argc - 1][0] != '-')
        c->plan = argv[argc - 1];
    if (c->sub == NULL || strcmp(c->sub, "plan") != 0)
        return;
    for (i++; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-')
            a++;
        if (strncmp(a, "-out=", 5) == 0)
            c->out = a + 5;
        else if (strcmp(a, "-out") == 0 && i + 1 < argc)
            c->out = argv[++i];
    }
}

/* apply's operand as a path (against workdir, the command's -chdir),
 * when it names a saved plan: a zip file, as the CLI writes plans. NULL
 * otherwise (an old CLI's directory operand, a variable's value). */
static char *saved_plan_path(const char *workdir, const char *operand)
{
    tftap_buf p = TFTAP_BUF_INIT;
    if (operand[0] == '/')
        tftap_buf_puts(&p, operand);
    else
        tftap_buf_printf(&p, "%s/%s", workdir, operand);
    tftap_buf_cstr(&p);
    char *path = tftap_buf_failed(&p) ? NULL : tftap_buf_take(&p, NULL);
    tftap_buf_done(&p);
    unsigned char magic[4] = {0};
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    int zip = fd >= 0 && read(fd, magic, sizeof magic) == (ssize_t)sizeof magic &&
              memcmp(magic, "PK\003\004", 4) == 0;
    if (fd >= 0)
        close(fd);
    if (!zip) {
        free(path);
        return NULL;
    }
    return path;
}

/* Run the user's command attached to the terminal; returns its exit code
 * (128 + signal when killed), or -1 with errno when it could not start. */
static int run_attached(char *const *argv, char *const *env)
{
    struct run_signals rs;
    int exec_err[2];

    /* A close-on-exec pipe tells us whether exec itself failed. */
    if (pipe2(exec_err, O_CLOEXEC) != 0)
        return -1;
    run_signals_start(&rs);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(exec_err[0]);
        close(exec_err[1]);
        run_signals_stop(&rs);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        run_signals_child(&rs);
        close(exec_err[0]);
        execvpe(argv[0], argv, env);
        int e = errno;
        ssize_t w = write(exec_err[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(exec_err[1]);
    int e = 0;
    ssize_t n;
    while ((n = read(exec_err[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(exec_err[0]);

    int st = 0;
    int waited = run_signals_wait(&rs, pid, &st);
    run_signals_stop(&rs);
    if (n == (ssize_t)sizeof e) {
        errno = e;
        return -1;
    }
    if (waited != 0) {
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Commands whose provider calls are about resources in a state: their calls
 * are tied to addresses afterwards. */
static int matches_addresses(const struct cmdline *c)
{
    static const char *const subs[] = {"plan", "apply", "destroy", "refresh", "import", "test"};
    for (size_t i = 0; c->sub && i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(c->sub, subs[i]) == 0)
            return 1;
    return 0;
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
}

/* A command the acceptance tests' front runs as it is: `version` (the
 * harness asks it before any test, with no provider to call). */
static int front_passes_through(int argc, char **argv)
{
    struct cmdline c;
    parse_cmdline(argc, argv, &c);
    return c.sub != NULL && strcmp(c.sub, "version") == 0;
}

int launch_run(char **cmd, int ncmd, const struct launch_run_opts *ro)
{
    struct launch_wrap_opts o = {0};
    struct launch_providers set;
    struct cmdline cl;
    tftap_buf err = TFTAP_BUF_INIT;
    char *exe = NULL, *db = NULL, *workdir = NULL, *cwd = NULL, *version = NULL;
    char *spool = NULL, *record = NULL; /* a PostgreSQL record's run held in a spool */
    int deferred = 0;                   /* the run's end left to a finisher in the background */
    int no_spool = 0;                   /* why there is none, when there must be one */
    char *tmp = NULL, *config = NULL, **env = NULL, *planfile = NULL, *log_path = NULL;
    char *applied_plan = NULL;
    char **aux_env = NULL;
    off_t log_size = 0;
    char env_cfg[4200], env_db[4200], env_run[64], env_dir[4200];
    int no_match = ro->no_match, code = 1, wrapped = 0, reattach = ro->reattach;
    struct reattached *procs = NULL;
    size_t nprocs = 0;
    tftap_buf reattach_json = TFTAP_BUF_INIT, before = TFTAP_BUF_INIT;
    char *env_reattach = NULL;
    int64_t run_id = 0;
    char run_uuid[STORE_UUID_LEN + 1] = "";
    /* Acceptance tests (run_acc.c): as the front of one step's CLI
     * command, the relays in front of the harness's reattached providers;
     * as the parent (go test), the front it hands the harness. */
    const char *reattach_in = ro->front_dir ? getenv("TF_REATTACH_PROVIDERS") : NULL;
    size_t nattach = reattach_count(reattach_in), nattached = 0;
    struct reattached *attached = NULL;
    char *test_name = NULL, *real_cli = NULL, *front = NULL, *front_db = NULL;
    char *env_acc_path = NULL, *env_acc_mask = NULL;
    char *env_log_path = NULL;
    int test_step = 0, own_mask = 0;
    store *s = NULL;
    store_hold *hold = NULL; /* the run, ours until it is over in the record */
    struct captured ver = {0, -1};
    struct workdir_snap snap = {0};

    /* The CLI commands tftap runs itself around a step's (state pull,
     * show -json) log nowhere: the harness's per-test log is its own. */
    static char *quiet_helpers[] = {"TF_LOG=", "TF_LOG_CORE=", "TF_LOG_PROVIDER=", "TF_LOG_PATH="};
    struct launch_run_opts front_ro;
    if (ro->front_dir != NULL && ro->naux_env == 0) {
        front_ro = *ro;
        front_ro.aux_env = quiet_helpers;
        front_ro.naux_env = sizeof quiet_helpers / sizeof quiet_helpers[0];
        ro = &front_ro;
    }
    if (ro->front_dir != NULL && front_passes_through(ncmd, cmd)) {
        /* The harness asking the CLI's version, outside any test step:
         * nothing to record, and nothing of ours in its way. */
        execv(cmd[0], cmd);
        launch_error("cannot run %s: %s", cmd[0], strerror(errno));
        return 127;
    }

    memset(&set, 0, sizeof set);
    o.record_sensitive = ro->record_sensitive;
    o.keep_raw = ro->keep_raw;
    /* A run that keeps its values has them exported as the providers'
     * schemas redact them, call by call (the record itself stays clear). */
    run_otlp_env(ro->otlp, ro->otlp_values, !ro->record_sensitive);
    const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
    const char *cli = strstr(base, "terraform") ? "terraform" : "tofu";
    int is_cli = ro->is_cli || strstr(base, "tofu") || strstr(base, "terraform");
    /* Another program (go test, make) may run an acceptance test suite:
     * the CLI it would run is given a front that records each command. */
    if (!is_cli && ro->front_dir == NULL)
        real_cli = acc_real_cli();
    if (real_cli != NULL) {
        const char *mask = getenv("TF_LOG_PATH_MASK");
        own_mask = mask == NULL || strstr(mask, "%s") == NULL;
        no_match = 1;
    } else if (!is_cli && ro->front_dir == NULL) {
        /* A script or make: never ask it for "state pull" or "show -json". */
        launch_error("note: '%s' is neither tofu nor terraform: the providers it starts through "
                     "tofu or terraform are recorded, resource addresses are not looked up",
                     base);
        no_match = 1;
    }
    parse_cmdline(ncmd, cmd, &cl);

    if (ro->front_dir != NULL && ro->db == NULL)
        front_db = acc_front_db(ro->front_dir);
    const char *db_path = front_db ? front_db : launch_db_path(ro->db);
    if ((exe = launch_self_exe()) == NULL || (db = launch_abspath(db_path)) == NULL ||
        (cwd = getcwd(NULL, 0)) == NULL) {
        launch_error("cannot find this program's or the current directory's path: %s",
                     strerror(errno));
        goto cleanup;
    }
    if (store_path_is_url(db) && ro->front_dir == NULL && !ro->record_sensitive) {
        /* A PostgreSQL record gets the run once its end has redacted what
         * core marks sensitive: until then it is recorded into a spool
         * keyed with the record's key (run_spool.c). A record that cannot
         * be opened is said below, as for any database. With
         * --record-sensitive nothing is held back: recorded live. */
        store *rec = NULL;
        if (store_open(db, STORE_OPEN_CREATE, &rec) == 0 &&
            (no_spool = run_spool_make(rec, db, NULL, &spool)) == 0) {
            record = db;
            db = spool;
        }
        store_close(rec);
    }
    if (ro->naux_env && (aux_env = run_env_with(ro->aux_env, ro->naux_env)) == NULL) {
        launch_error("out of memory");
        goto cleanup;
    }
    if ((log_path = run_log_path(db)) != NULL)
        log_size = file_size(log_path);
    if ((workdir = realpath(cl.chdir ? cl.chdir : ".", NULL)) == NULL) {
        launch_error("cannot resolve -chdir=%s: %s", cl.chdir, strerror(errno));
        goto cleanup;
    }
    if (cl.out != NULL) {
        tftap_buf p = TFTAP_BUF_INIT;
        if (cl.out[0] == '/')
            tftap_buf_puts(&p, cl.out);
        else
            tftap_buf_printf(&p, "%s/%s", workdir, cl.out);
        tftap_buf_cstr(&p);
        planfile = tftap_buf_failed(&p) ? NULL : tftap_buf_take(&p, NULL);
        tftap_buf_done(&p);
    }

    if (cl.plan != NULL)
        applied_plan = saved_plan_path(workdir, cl.plan);

    if (launch_discover(workdir, cli, &set, &err) != 0) {
        if (!set.unreadable) {
            /* What the config says is wrong (a shim that would start tftap
             * again): the CLI would fail on it too, so say it and stop. */
            launch_error("%s", tftap_buf_cstr(&err));
            goto cleanup;
        }
        /* A file tftap cannot read never stands in the way of the command
         * (the CLI has its own word on it): it runs unwrapped, recorded as
         * a run without calls. */
        launch_error("%s; running the command without recording its providers",
                     tftap_buf_cstr(&err));
        launch_providers_done(&set);
        memset(&set, 0, sizeof set);
    }
    /* tftap replay: its providers stand in for every one the directory
     * uses, whatever the command (with them, init installs nothing). */
    if (ro->providers != NULL &&
        launch_providers_replace(&set, ro->providers, ro->nproviders) != 0) {
        launch_error("out of memory");
        goto cleanup;
    }
    if (ro->front_dir != NULL && (test_name = acc_test_name()) != NULL)
        test_step = acc_step_of(ro->front_dir, test_name, workdir,
                                cl.sub != NULL && strcmp(cl.sub, "init") == 0);
    wrapped = set.n > 0 && (ro->providers != NULL || !installs_providers(&cl));
    if (set.shims && wrapped)
        /* A config exported by `tftap wrap`: its shims stand aside for
         * ours, or every call would be recorded twice. */
        launch_error("%s is a tftap wrap config: this run's shims replace its %zu, each call is "
                     "recorded once, in this run",
                     set.user_config, set.shims);
    if (set.missing && wrapped)
        launch_error("%zu provider(s) not installed, not recorded (first: %s); run '%s init'",
                     set.missing, set.missing_first, cli);
    if (wrapped || nattach > 0 || real_cli != NULL) {
        /* The shims' directory, and in both modes where each proxy's
         * recorder holds its lock until the record is written; the
         * acceptance tests' front and its state. */
        if ((tmp = launch_tempdir("run")) == NULL) {
            launch_error("cannot create a temporary directory: %s", strerror(errno));
            goto cleanup;
        }
        o.tftap_exe = exe;
        o.db = db;
        if (wrapped && !reattach && launch_wrap_write(&set, tmp, &o, &config, &err) != 0) {
            launch_error("%s", tftap_buf_cstr(&err));
            goto cleanup;
        }
    }

    if (is_cli)
        version = run_version_remembered(cmd[0]);
    /* The run row; a database we cannot use never stops the user's command. */
    int rc = no_spool ? no_spool : store_open(db, STORE_OPEN_CREATE, &s);
    if (rc == 0)
        rc = store_run_begin_held(s, cmd[0], ncmd - 1, (const char *const *)cmd + 1, workdir, cli,
                                  version, &run_id, &hold);
    /* Which run run_id names, for a finisher that finds the file replaced. */
    if (rc == 0 && store_run_uuid(s, run_id, run_uuid) != 0)
        run_uuid[0] = '\0';
    if (rc != 0 && no_spool) {
        launch_error("cannot record into %s: no spool to hold its run in until its end (%s); "
                     "running the command unrecorded",
                     STORE_SHOWN(db), tftap_strerror(no_spool));
    } else if (rc != 0) {
        /* Nothing could be recorded under this run (a full disk, an
         * unwritable directory): run the command exactly as without tftap,
         * so that this line is all the user sees of us, not one more per
         * provider process. */
        struct stat dst;
        int is_dir = !store_path_is_url(db) && stat(db, &dst) == 0 && S_ISDIR(dst.st_mode);
        int is_bundle = !is_dir && !store_path_is_url(db) && store_file_is_bundle(db) == 1;
        launch_error("cannot record into %s (%s); running the command unrecorded", STORE_SHOWN(db),
                     is_bundle
                         ? "a bundle is read only: record into a database and bundle a run of it"
                     : is_dir ? "a directory: --db names a database file, e.g. DIR/tftap.db"
                     : s      ? store_errmsg(s)
                     : store_path_is_url(db) && *store_open_error() ? store_open_error()
                                                                    : tftap_strerror(rc));
        run_id = 0;
        wrapped = 0;
        nattach = 0;
        if (spool != NULL)
            (void)store_file_remove(spool);
        free(real_cli);
        real_cli = NULL;
        store_close(s);
        s = NULL;
    }
    if (run_id > 0 && run_spool_is(db) && store_run_hold_back(s, run_id, 1) != 0)
        launch_error("cannot mark run %lld held back in %s: %s", (long long)run_id, db,
                     store_errmsg(s));
    if (run_id > 0 && ro->front_dir != NULL &&
        store_run_set_test(s, run_id, ro->parent_id, test_name, test_step) != 0)
        launch_error("cannot name run %lld by its test in %s: %s", (long long)run_id,
                     STORE_SHOWN(db), store_errmsg(s));
    if (real_cli != NULL &&
        acc_front_write(tmp, exe, real_cli, db, run_id, ro, own_mask, &front, &err) != 0) {
        launch_error("%s; the acceptance tests' steps are not recorded", tftap_buf_cstr(&err));
        acc_front_clean(tmp, real_cli);
        free(real_cli);
        real_cli = NULL;
    } else if (real_cli != NULL) {
        /* Which CLI the tests get, and where their steps go: one line. */
        launch_error("note: '%s' is neither tofu nor terraform: the CLI commands of the acceptance "
                     "tests it runs (with %s) are recorded as step runs of run %lld",
                     base, real_cli, (long long)run_id);
    }
    /* Otherwise kept open through the command: the last connection to
     * close checkpoints the WAL (two fsyncs) before the command could
     * start, and the end of the run would open it again. Not with
     * --reattach: its proxies are forks of this process, which must not
     * inherit an open SQLite connection (their recorders open the same
     * file, and SQLite's locks are per process). */
    if (reattach || nattach > 0) {
        store_close(s);
        s = NULL;
    }

    char *add[12];
    size_t nadd = 0;
    if (nattach > 0 && run_id > 0) {
        o.tftap_exe = exe;
        o.db = db;
        attached = calloc(nattach, sizeof *attached);
        tftap_buf json = TFTAP_BUF_INIT, v = TFTAP_BUF_INIT;
        if (attached == NULL || reattach_attach_start(reattach_in, &o, run_id, tmp, attached,
                                                      &nattached, &json, &err) != 0) {
            /* The harness's providers are dialed directly, unrecorded: the
             * test step runs as without tftap. */
            launch_error("%s; this step's reattached providers are not recorded",
                         attached ? tftap_buf_cstr(&err) : "out of memory");
        } else {
            tftap_buf_puts(&v, "TF_REATTACH_PROVIDERS=");
            tftap_buf_append(&v, json.data, json.len);
            tftap_buf_cstr(&v);
            env_reattach = tftap_buf_failed(&v) ? NULL : tftap_buf_take(&v, NULL);
            if (env_reattach != NULL)
                add[nadd++] = env_reattach;
        }
        tftap_buf_done(&json);
        tftap_buf_done(&v);
    }
    /* tftap's own TF_LOG_PATH_MASK named the test; the CLI logs as the
     * harness would have had it log without it (tfexec: TF_ACC_LOG_PATH,
     * else nowhere). */
    static char no_log[] = "TF_LOG=", no_log_core[] = "TF_LOG_CORE=",
                no_log_provider[] = "TF_LOG_PROVIDER=", no_log_path[] = "TF_LOG_PATH=";
    if (ro->front_dir != NULL && ro->own_log_mask) {
        const char *acc_log = getenv("TF_ACC_LOG_PATH");
        if (acc_log != NULL && acc_log[0] != '\0') {
            tftap_buf v = TFTAP_BUF_INIT;
            tftap_buf_printf(&v, "TF_LOG_PATH=%s", acc_log);
            tftap_buf_cstr(&v);
            env_log_path = tftap_buf_failed(&v) ? NULL : tftap_buf_take(&v, NULL);
            tftap_buf_done(&v);
            if (env_log_path != NULL)
                add[nadd++] = env_log_path;
        } else {
            add[nadd++] = no_log;
            add[nadd++] = no_log_core;
            add[nadd++] = no_log_provider;
            add[nadd++] = no_log_path;
        }
    }
    if (front != NULL) {
        tftap_buf v = TFTAP_BUF_INIT;
        tftap_buf_printf(&v, "TF_ACC_TERRAFORM_PATH=%s", front);
        tftap_buf_cstr(&v);
        env_acc_path = tftap_buf_failed(&v) ? NULL : tftap_buf_take(&v, NULL);
        tftap_buf_done(&v);
        if (own_mask) {
            tftap_buf_printf(&v, "TF_LOG_PATH_MASK=%s/logs/%%s", tmp);
            tftap_buf_cstr(&v);
            env_acc_mask = tftap_buf_failed(&v) ? NULL : tftap_buf_take(&v, NULL);
            tftap_buf_done(&v);
        }
        if (env_acc_path == NULL || (own_mask && env_acc_mask == NULL)) {
            launch_error("out of memory");
            goto cleanup;
        }
        add[nadd++] = env_acc_path;
        if (env_acc_mask != NULL)
            add[nadd++] = env_acc_mask;
    }
    if (wrapped && reattach) {
        o.tftap_exe = exe;
        o.db = db;
        procs = calloc(set.n, sizeof *procs);
        if (procs == NULL) {
            launch_error("out of memory");
            goto cleanup;
        }
        if (reattach_start(&set, &o, run_id, tmp, procs, &reattach_json, &err) != 0) {
            launch_error("%s", tftap_buf_cstr(&err));
            goto cleanup;
        }
        nprocs = set.n;
        tftap_buf v = TFTAP_BUF_INIT;
        tftap_buf_puts(&v, "TF_REATTACH_PROVIDERS=");
        tftap_buf_append(&v, reattach_json.data, reattach_json.len);
        tftap_buf_cstr(&v);
        env_reattach = tftap_buf_failed(&v) ? NULL : tftap_buf_take(&v, NULL);
        tftap_buf_done(&v);
        if (env_reattach == NULL) {
            launch_error("out of memory");
            goto cleanup;
        }
        add[nadd++] = env_reattach;
    }
    /* Without its password: the CLI and every provider would have it in
     * their environment (/proc/PID/environ, a crash report, a provider
     * that logs its environment). The shims read the whole URI from their
     * metadata file (0600, in tmp) instead. */
    char *db_bare = store_without_password(db);
    int db_long = db_bare == NULL ||
                  snprintf(env_db, sizeof env_db, "TFTAP_DB=%s", db_bare) >= (int)sizeof env_db;
    free(db_bare);
    if (db_long) {
        launch_error("database path too long: %s", STORE_SHOWN(db));
        goto cleanup;
    }
    add[nadd++] = env_db;
    if (run_id > 0) {
        snprintf(env_run, sizeof env_run, "TFTAP_RUN_ID=%lld", (long long)run_id);
        add[nadd++] = env_run;
    }
    if (wrapped) {
        if (snprintf(env_dir, sizeof env_dir, "TFTAP_RUN_DIR=%s", tmp) >= (int)sizeof env_dir) {
            launch_error("temporary path too long: %s", tmp);
            goto cleanup;
        }
        add[nadd++] = env_dir;
    }
    if (wrapped && !reattach) {
        if (snprintf(env_cfg, sizeof env_cfg, "TF_CLI_CONFIG_FILE=%s", config) >=
            (int)sizeof env_cfg) {
            launch_error("temporary path too long: %s", config);
            goto cleanup;
        }
        add[nadd++] = env_cfg;
    }
    assert(nadd <= sizeof add / sizeof add[0]);
    if ((env = run_env_with(add, nadd)) == NULL) {
        launch_error("out of memory");
        goto cleanup;
    }

    int match = (wrapped || nattached > 0) && !no_match && run_id > 0 && matches_addresses(&cl);
    /* `test` plans and applies in states of its own, never the working
     * directory's. */
    int have_before = match && strcmp(cl.sub, "test") != 0 &&
                      run_state_before(cmd[0], aux_env, workdir, cmd + 1, &before) == 0;
    /* A step's directory goes with the test: what its command found there
     * is kept, for `tftap replay` of the step. */
    if (ro->front_dir != NULL && run_id > 0)
        workdir_snap_take(workdir, &snap);
    code = run_attached(cmd, env);
    int64_t ended_us = tftap_now_us();
    if (code < 0) {
        launch_error("cannot run %s: %s", cmd[0], strerror(errno));
        code = 127;
    }
    run_signals_keep_code(code);
    /* Only tofu or terraform is asked (a script or make does not know
     * `version -json`), and a binary an earlier run asked not again. */
    if (run_id > 0 && is_cli && version == NULL)
        run_version_start(cmd[0], &ver);
    /* The providers outlive the CLI in reattach mode: end them (and flush
     * their records) before the run is closed. */
    reattach_stop(procs, nprocs);
    nprocs = 0;
    /* The relays end once the calls the CLI left end; the harness's
     * providers are its own and go on. */
    reattach_stop(attached, nattached);
    nattached = 0;
    {
        struct run_end e = {
            .db = db,
            .run_id = run_id,
            .uuid = run_uuid[0] != '\0' ? run_uuid : NULL,
            .code = code,
            .ended_us = ended_us,
            .cli_path = cmd[0],
            .aux_env = aux_env,
            .replayed = ro->providers != NULL,
            .workdir = workdir,
            .sub = cl.sub,
            .planfile = planfile,
            .applied_plan = applied_plan,
            .refresh_only = cl.refresh_only,
            .match = match,
            .have_before = have_before,
            .before = &before,
            .wrapped = wrapped || nattach > 0,
            .run_dir = tmp,
            .log_path = log_path,
            .log_size = log_size,
            .is_cli = is_cli,
            .args = cmd + 1,
            .env = env,
            .record = record,
        };
        deferred = run_end(&e, &s, &version, &ver);
    }
    workdir_snap_store(db, run_id, &snap);
    /* A run whose end a finisher records is copied by it, once ended. */
    if (record != NULL && run_id > 0 && !deferred) {
        store_close(s); /* the spool's file is removed once copied */
        s = NULL;
        run_spool_publish(record, db, run_id, run_finish_wait_ms(), 0);
    }

cleanup:
    store_close(s);
    store_hold_free(hold); /* a finisher forked from us holds the run on its own */
    if (ver.pid > 0) {
        tftap_buf discard = TFTAP_BUF_INIT;
        capture_finish(&ver, 0, &discard);
        tftap_buf_done(&discard);
    }
    if (procs != NULL) {
        reattach_stop(procs, nprocs);
        free(procs);
    }
    if (attached != NULL) {
        reattach_stop(attached, nattached);
        free(attached);
    }
    tftap_buf_done(&reattach_json);
    tftap_buf_done(&before);
    workdir_snap_done(&snap);
    free(env_reattach);
    free(env_log_path);
    free(env_acc_path);
    free(env_acc_mask);
    free(test_name);
    free(front);
    free(front_db);
    if (tmp != NULL && real_cli != NULL)
        acc_front_clean(tmp, real_cli);
    free(real_cli);
    if (tmp != NULL) {
        launch_wrap_clean(&set, tmp);
        wrap_recorder_locks_clean(tmp);
        if (rmdir(tmp) != 0)
            launch_error("could not remove %s: %s", tmp, strerror(errno));
    }
    launch_providers_done(&set);
    tftap_buf_done(&err);
    free(exe);
    free(record ? record : db);
    free(spool);
    free(workdir);
    free(cwd);
    free(version);
    free(tmp);
    free(config);
    free(env);
    free(aux_env);
    free(planfile);
    free(applied_plan);
    free(log_path);
    return code;
}
