/* tftap run -- tofu|terraform ARGS...: run one CLI command with every
 * provider it uses wrapped by a shim, as one recorded run.
 *
 * The command stays attached to the user's terminal; tftap only waits,
 * forwards signals sent to it by kill(2) (the terminal's own Ctrl-C already
 * reaches the whole foreground group, so those are not sent twice: tofu
 * reads a second interrupt as "stop now"), records the exit code and exits
 * with it. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_int.h"
#include "cli/wrap.h"
#include "proxy/proxy.h"
#include "analysis/analysis.h"
#include "store/store.h"

static volatile sig_atomic_t child_pid;

/* Forward what someone sent us with kill(2); ignore what the kernel sent
 * on behalf of the terminal, which the child received too. */
static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    if (child_pid > 0 && info != NULL && info->si_code <= 0)
        kill((pid_t)child_pid, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])

/* What the command line says: the subcommand, -chdir and a plan's -out. */
struct cmdline {
    const char *sub;   /* "plan", "apply", ... or NULL */
    const char *sub2;  /* the word after it ("providers lock"), or NULL */
    const char *chdir; /* -chdir=DIR or NULL */
    const char *out;   /* plan -out=FILE or NULL */
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

/* Run the user's command attached to the terminal; returns its exit code
 * (128 + signal when killed), or -1 with errno when it could not start. */
static int run_attached(char *const *argv, char *const *env)
{
    struct sigaction sa, old[NFORWARDED];
    int exec_err[2];
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);

    /* A close-on-exec pipe tells us whether exec itself failed. */
    if (pipe2(exec_err, O_CLOEXEC) != 0)
        return -1;
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaction(forwarded[i], &sa, &old[i]);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(exec_err[0]);
        close(exec_err[1]);
        for (size_t i = 0; i < NFORWARDED; i++)
            sigaction(forwarded[i], &old[i], NULL);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        for (size_t i = 0; i < NFORWARDED; i++)
            sigaction(forwarded[i], &old[i], NULL);
        close(exec_err[0]);
        execvpe(argv[0], argv, env);
        int e = errno;
        ssize_t w = write(exec_err[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    child_pid = pid;
    close(exec_err[1]);
    int e = 0;
    ssize_t n;
    while ((n = read(exec_err[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(exec_err[0]);

    int st = 0, code;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    child_pid = 0;
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaction(forwarded[i], &old[i], NULL);
    if (n == (ssize_t)sizeof e) {
        errno = e;
        return -1;
    }
    code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return code;
}

/* Commands whose provider calls are about resources in a state: their calls
 * are tied to addresses afterwards. */
static int matches_addresses(const struct cmdline *c)
{
    static const char *const subs[] = {"plan", "apply", "destroy", "refresh", "import"};
    for (size_t i = 0; c->sub && i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(c->sub, subs[i]) == 0)
            return 1;
    return 0;
}

/* The local state file the command will start from, when nothing but the
 * defaults decide where it is: no backend configured in the data dir (a
 * backend, even "local" with a path, is left to `state pull`), no -state
 * flag. The workspace comes from TF_WORKSPACE or the data dir's
 * "environment" file. 1 with *path set (heap), 0 when it cannot be told. */
static int local_state_path(const char *workdir, char *const *args, char **path)
{
    for (size_t i = 0; args[i] != NULL; i++) {
        const char *a = args[i][0] == '-' && args[i][1] == '-' ? args[i] + 1 : args[i];
        if (strncmp(a, "-state", 6) == 0 || strncmp(a, "-backend", 8) == 0)
            return 0;
    }
    const char *data_dir = getenv("TF_DATA_DIR");
    tftap_buf p = TFTAP_BUF_INIT, ws = TFTAP_BUF_INIT;
    int ok = 0;
    if (data_dir != NULL && data_dir[0] == '/')
        tftap_buf_puts(&p, data_dir);
    else
        tftap_buf_printf(&p, "%s/%s", workdir,
                         data_dir != NULL && data_dir[0] ? data_dir : ".terraform");
    size_t dir_len = p.len;
    struct stat st;
    tftap_buf_puts(&p, "/terraform.tfstate");
    if (tftap_buf_failed(&p) || lstat(tftap_buf_cstr(&p), &st) == 0 || errno != ENOENT)
        goto done; /* a backend is configured (or we cannot tell) */
    const char *env_ws = getenv("TF_WORKSPACE");
    if (env_ws != NULL && env_ws[0] != '\0') {
        tftap_buf_puts(&ws, env_ws);
    } else {
        p.len = dir_len;
        tftap_buf_puts(&p, "/environment");
        if (tftap_read_file(tftap_buf_cstr(&p), 4096, &ws) != 0 && errno != ENOENT)
            goto done;
        while (ws.len > 0 && (ws.data[ws.len - 1] == '\n' || ws.data[ws.len - 1] == ' '))
            ws.len--;
    }
    const char *name = tftap_buf_cstr(&ws);
    if (tftap_buf_failed(&ws) || strchr(name, '/') != NULL || strcmp(name, "..") == 0)
        goto done;
    tftap_buf_reset(&p);
    if (name[0] == '\0' || strcmp(name, "default") == 0)
        tftap_buf_printf(&p, "%s/terraform.tfstate", workdir);
    else
        tftap_buf_printf(&p, "%s/terraform.tfstate.d/%s/terraform.tfstate", workdir, name);
    if (!tftap_buf_failed(&p)) {
        *path = tftap_buf_take(&p, NULL);
        ok = *path != NULL;
    }
done:
    tftap_buf_done(&p);
    tftap_buf_done(&ws);
    return ok;
}

/* Before the command: the state it starts from, the only record of objects
 * the command may destroy or that a plan not saved to a file never names.
 * Read from the file when it is local by default (a `CLI state pull` costs
 * a whole CLI start, and reads the same file), else `CLI state pull`, which
 * starts no provider. 0 if read ("" when there is no state yet). */
static int state_before(const char *cli_path, char *const *env, const char *workdir,
                        char *const *args, tftap_buf *out)
{
    char *path = NULL;
    if (local_state_path(workdir, args, &path)) {
        int rc = tftap_read_file(path, CAPTURE_MAX, out);
        int missing = rc == TFTAP_EIO && errno == ENOENT;
        free(path);
        /* OpenTofu's state encryption leaves only ciphertext in the file;
         * the CLI decrypts it for `state pull`. */
        if (rc == 0 && out->len > 0 &&
            memmem(out->data, out->len, "\"encrypted_data\"", 16) != NULL)
            rc = TFTAP_EDECODE;
        if (rc == 0 || missing) {
            if (missing)
                tftap_buf_reset(out);
            return 0;
        }
        tftap_buf_reset(out);
    }
    char *argv[] = {(char *)cli_path, "state", "pull", NULL};
    int rc = capture(argv, env, workdir, CAPTURE_MAX, out);
    if (rc != 0 || tftap_buf_failed(out)) {
        tftap_buf_reset(out);
        return -1;
    }
    return 0;
}

/* After the command: what the store ties calls to resource addresses by,
 * the state before it and `CLI show -json [PLANFILE]` after it (into
 * *out). Runs unwrapped (env: NULL for ours, or tftap replay's, whose CLI
 * config sends the CLI straight to the replayed providers): nothing of it
 * is recorded. Problems only warn. Returns how many docs it filled. */
static size_t match_docs(const char *cli_path, char *const *env, const char *workdir,
                         const char *planfile, int have_before, const tftap_buf *before,
                         int read_after, tftap_buf *out, analysis_match_doc docs[2])
{
    char *argv[] = {(char *)cli_path, "show", "-json", (char *)planfile, NULL};
    size_t ndocs = 0;
    if (have_before) {
        /* No state yet reads as a state without resources. */
        docs[ndocs++] = (analysis_match_doc){before->len ? before->data : "{}",
                                             before->len ? before->len : 2, 0};
    }
    if (read_after) {
        int rc = capture(argv, env, workdir, CAPTURE_MAX, out);
        if (rc == 0 && out->len > 0 && !tftap_buf_failed(out))
            docs[ndocs++] = (analysis_match_doc){out->data, out->len, 1};
        else
            cli_error("could not read '%s show -json' to match calls to addresses", cli_path);
    }
    return ndocs;
}

static int match_apply(store *s, int64_t run_id, const analysis_match_doc *docs, size_t ndocs)
{
    return analysis_match_addresses(s, run_id, docs, ndocs,
                                    "neither the state before the run nor a plan or state after "
                                    "it could be read",
                                    NULL, NULL);
}

/* The check's reading of the run's changes, on a connection of its own
 * beside the address matching: most of the check's cost, and none of it
 * depends on the addresses the matching writes meanwhile
 * (analysis_check_read). */
struct check_reader {
    const char *db;
    int64_t run_id;
    analysis_check_pass *pass; /* NULL: not read, the check reads it all */
    pthread_t thread;
    int started;
};

static void *check_reader_main(void *arg)
{
    struct check_reader *r = arg;
    store *s = NULL;
    if (store_open(r->db, STORE_OPEN_READONLY, &s) == 0 &&
        analysis_check_read(s, r->run_id, &r->pass) != 0)
        r->pass = NULL;
    store_close(s);
    return NULL;
}

static void check_reader_start(struct check_reader *r, const char *db, int64_t run_id)
{
    *r = (struct check_reader){.db = db, .run_id = run_id};
    r->started = pthread_create(&r->thread, NULL, check_reader_main, r) == 0;
}

static analysis_check_pass *check_reader_join(struct check_reader *r)
{
    if (r->started)
        pthread_join(r->thread, NULL);
    r->started = 0;
    return r->pass;
}

/* The write-ahead log copied into the database file beside the matching:
 * it holds everything the recorders wrote, which the close at the end
 * would copy otherwise, after the rest (two syncs and the run's pages). */
struct checkpointer {
    const char *db;
    pthread_t thread;
    int started;
};

static void *checkpointer_main(void *arg)
{
    struct checkpointer *c = arg;
    store *s = NULL;
    if (store_open(c->db, 0, &s) == 0)
        (void)store_checkpoint(s); /* the close does it otherwise */
    store_close(s);
    return NULL;
}

static void checkpointer_start(struct checkpointer *c, const char *db)
{
    *c = (struct checkpointer){.db = db};
    if (!store_path_is_url(db))
        c->started = pthread_create(&c->thread, NULL, checkpointer_main, c) == 0;
}

static void checkpointer_join(struct checkpointer *c)
{
    if (c->started)
        pthread_join(c->thread, NULL);
    c->started = 0;
}

/* How long tftap run's background finisher keeps trying to record the end
 * of a run: as long as the recorders keep their part (it waits for them
 * first), and a minute more. */
#define RUN_FINISH_MS (PROXY_RECORDER_LINGER_MS + 60000u)

/* How long tftap run, the database open again at the end, lets recorders
 * that found it away write what they kept (they retry every second). */
#define RUN_CATCHUP_MS 3000u

/* A bound in seconds from the environment variable `name` (0 to a day),
 * in ms; unset: default_ms; anything else says so and is default_ms. */
static unsigned env_seconds_ms(const char *name, unsigned default_ms)
{
    const char *e = getenv(name);
    if (e != NULL && e[0] != '\0') {
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(e, &end, 10);
        if (errno == 0 && end != e && *end == '\0' && v <= 86400)
            return (unsigned)v * 1000;
        cli_error("%s is not a number of seconds (0 to 86400); using %u s", name,
                  default_ms / 1000);
    }
    return default_ms;
}

/* How long the finisher keeps trying: TFTAP_FINISH_WAIT seconds, else
 * RUN_FINISH_MS. */
static unsigned finish_wait_ms(void)
{
    return env_seconds_ms("TFTAP_FINISH_WAIT", RUN_FINISH_MS);
}

static char *log_path_for(const char *db);

/* The finisher gave up: one line in the recorders' log (its stderr is
 * nowhere, and the user's terminal was left long ago), in their format. */
static void finish_log(const char *db, int64_t run_id, int code, const char *why)
{
    char *path = log_path_for(db);
    int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
    free(path);
    if (fd < 0)
        return;
    char text[2048];
    int k = snprintf(text, sizeof text,
                     "gave up recording the end of run %lld (exit code %d) into %s: %s",
                     (long long)run_id, code, STORE_SHOWN(db), why);
    if (k > 0)
        tftap_log_line(fd, "tftap run", text,
                       (size_t)k < sizeof text ? (size_t)k : sizeof text - 1);
    close(fd);
}

/* The database was unavailable when the run ended (a PostgreSQL server
 * restarting): the user's command is over and tftap run exits with its
 * code now. A process of its own (init's child, like the recorders) waits
 * until every recorder still holding its part (lock_fds, shared locks:
 * proxy/recproc.c) has written it, then records the exit code, the CLI's
 * version and the addresses, trying every second for wait_ms. Takes
 * the fds. Returns 0 when the finisher started. */
static int finish_later(const char *db, int64_t run_id, int code, const char *version,
                        const analysis_match_doc *docs, size_t ndocs, int *lock_fds, size_t nlocks,
                        unsigned wait_ms)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        pid_t finisher = fork();
        if (finisher != 0)
            _exit(finisher < 0 ? 1 : 0); /* the parent learns whether there is one */
    }
    if (pid == 0) {
        setsid();
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        int64_t deadline = tftap_mono_ms() + wait_ms;
        (void)wrap_recorder_locks_wait_exclusive(
            lock_fds, nlocks,
            wait_ms < PROXY_RECORDER_LINGER_MS ? wait_ms : PROXY_RECORDER_LINGER_MS);
        for (;;) {
            store *s = NULL;
            char why[600];
            /* The exit code last: a reader who sees it sees the rest. */
            /* Matching may fail on the documents (not JSON): only a store
             * error is worth another try. */
            int rc = store_open(db, 0, &s);
            if (rc != 0)
                snprintf(why, sizeof why, "cannot open it: %s",
                         store_path_is_url(db) && *store_open_error() ? store_open_error()
                                                                      : tftap_strerror(rc));
            else if ((ndocs == 0 || match_apply(s, run_id, docs, ndocs) != TFTAP_ESTORE) &&
                     (version == NULL || store_run_set_cli_version(s, run_id, version) == 0) &&
                     (rc = store_run_end(s, run_id, code)) == 0) {
                store_close(s);
                _exit(0);
            } else
                snprintf(why, sizeof why, "cannot write it: %s",
                         tftap_strerror(rc ? rc : TFTAP_ESTORE));
            store_close(s);
            if (tftap_mono_ms() >= deadline) {
                char left[700];
                snprintf(left, sizeof left, "%s (tried every second for %u s)", why,
                         wait_ms / 1000);
                finish_log(db, run_id, code, left);
                _exit(1);
            }
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
    }
    for (size_t i = 0; i < nlocks; i++)
        close(lock_fds[i]);
    if (pid < 0)
        return -1;
    int wst = 0;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(wst) && WEXITSTATUS(wst) == 0 ? 0 : -1;
}

/* How long to wait for the recorders: TFTAP_RECORDER_WAIT seconds, 60 by
 * default. */
static unsigned recorder_wait_ms(void)
{
    return env_seconds_ms("TFTAP_RECORDER_WAIT", 60000);
}

/* The recorder processes' log beside the database (see proxy.h). */
static char *log_path_for(const char *db)
{
    size_t dirlen = 0;
    const char *dir = store_side_dir(db, &dirlen);
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_printf(&b, "%.*s/%s", dir ? (int)dirlen : 1, dir ? dir : ".", PROXY_LOG_NAME);
    tftap_buf_cstr(&b);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return NULL;
    }
    return tftap_buf_take(&b, NULL);
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
}

/* One line when the recorders logged anything since the run began (lines
 * of other commands writing into the same log meanwhile count too). */
static void report_log(const char *path, off_t from)
{
    char chunk[65536], first[200] = "";
    size_t lines = 0, flen = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (lseek(fd, from, SEEK_SET) == from) {
        ssize_t n;
        while (lines < 1000000 && (n = read(fd, chunk, sizeof chunk)) > 0) {
            for (ssize_t i = 0; i < n; i++) {
                /* Shown on the terminal: no control characters from a
                 * file others' messages (a collector's, say) went into. */
                if (lines == 0 && chunk[i] != '\n' && flen + 1 < sizeof first)
                    first[flen++] =
                        (unsigned char)chunk[i] < 0x20 || chunk[i] == 0x7f ? '?' : chunk[i];
                lines += chunk[i] == '\n';
            }
        }
    }
    close(fd);
    first[flen] = '\0';
    if (lines > 0)
        cli_error("the recorders logged %zu problem(s) in %s; the first: %s", lines, path, first);
}

static int run_lost(void *ctx, const store_run_row *row)
{
    *(int64_t *)ctx = row->dropped;
    return 0;
}

static void run_usage(FILE *f)
{
    fprintf(
        f,
        "usage: tftap run [--db PATH] [--reattach] [--record-sensitive] [--keep-raw]\n"
        "                 [--no-match] [--otlp URL] [--otlp-values] -- tofu|terraform ARGS...\n\n"
        "Run one OpenTofu/Terraform command with every provider it uses wrapped by\n"
        "tftap, recording all their calls as one run. The command keeps your terminal;\n"
        "tftap exits with its exit code. Providers are found through the lock file\n"
        "and where init installed them (or the plugin cache and filesystem mirrors of\n"
        "your CLI config); your CLI config is kept, with dev_overrides added for the\n"
        "shims. Commands that install providers ('init', 'get', 'providers lock',\n"
        "'providers mirror') run unwrapped, still recorded as runs.\n\n" CLI_RECORDING_OPTIONS_HELP
        "  --no-match           do not run 'show -json' after plan/apply to tie calls\n"
        "                       to resource addresses\n"
        "  --reattach           start each provider once, behind tftap, and let the CLI\n"
        "                       attach to it (TF_REATTACH_PROVIDERS) instead of using\n"
        "                       shims; every alias of a provider then shares one process\n",
        STORE_DEFAULT_PATH);
}

int cli_run(int argc, char **argv)
{
    struct run_opts ro = {0};
    enum {
        OPT_DB = 256,
        OPT_SENSITIVE,
        OPT_RAW,
        OPT_NO_MATCH,
        OPT_REATTACH,
        OPT_OTLP,
        OPT_OTLP_VALUES
    };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"record-sensitive", no_argument, NULL, OPT_SENSITIVE},
        {"keep-raw", no_argument, NULL, OPT_RAW},
        {"no-match", no_argument, NULL, OPT_NO_MATCH},
        {"reattach", no_argument, NULL, OPT_REATTACH},
        {"otlp", required_argument, NULL, OPT_OTLP},
        {"otlp-values", no_argument, NULL, OPT_OTLP_VALUES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 0;
    /* '+': the command's own arguments are not ours, "--" or not. */
    while ((opt = cli_getopt(argc, argv, "+h", longopts)) != -1) {
        switch (opt) {
        case 'h':
            run_usage(stdout);
            return 0;
        case OPT_SENSITIVE:
            ro.record_sensitive = 1;
            break;
        case OPT_RAW:
            ro.keep_raw = 1;
            break;
        case OPT_NO_MATCH:
            ro.no_match = 1;
            break;
        case OPT_REATTACH:
            ro.reattach = 1;
            break;
        case OPT_DB:
            ro.db = optarg;
            break;
        case OPT_OTLP:
            if (!cli_otlp_url_ok(optarg)) {
                cli_usage_error("run", "--otlp needs an http:// or https:// URL, not '%s'", optarg);
                return 2;
            }
            ro.otlp = optarg;
            break;
        case OPT_OTLP_VALUES:
            ro.otlp_values = 1;
            break;
        default:
            return 2;
        }
    }
    if (optind >= argc) {
        cli_usage_error("run", "no command given (tftap run -- tofu ARGS...)");
        return 2;
    }
    return run_command(argv + optind, argc - optind, &ro);
}

int run_command(char **cmd, int ncmd, const struct run_opts *ro)
{
    struct wrap_opts o = {0};
    struct wrap_set set;
    struct cmdline cl;
    tftap_buf err = TFTAP_BUF_INIT;
    char *exe = NULL, *db = NULL, *workdir = NULL, *cwd = NULL, *version = NULL;
    char *tmp = NULL, *config = NULL, **env = NULL, *planfile = NULL, *log_path = NULL;
    char **aux_env = NULL;
    off_t log_size = 0;
    char env_cfg[4200], env_db[4200], env_run[64], env_dir[4200];
    int no_match = ro->no_match, code = 1, wrapped = 0, reattach = ro->reattach;
    struct reattached *procs = NULL;
    size_t nprocs = 0;
    tftap_buf reattach_json = TFTAP_BUF_INIT, before = TFTAP_BUF_INIT;
    char *env_reattach = NULL;
    int64_t run_id = 0;
    store *s = NULL;
    struct captured ver = {0, -1};

    memset(&set, 0, sizeof set);
    o.record_sensitive = ro->record_sensitive;
    o.keep_raw = ro->keep_raw;
    cli_otlp_run_env(ro->otlp, ro->otlp_values);
    const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
    const char *cli = strstr(base, "terraform") ? "terraform" : "tofu";
    int is_cli = strstr(base, "tofu") || strstr(base, "terraform");
    if (!is_cli) {
        /* A script or make: never ask it for "state pull" or "show -json". */
        cli_error("note: '%s' is neither tofu nor terraform: the providers it starts through "
                  "tofu or terraform are recorded, resource addresses are not looked up",
                  base);
        no_match = 1;
    }
    parse_cmdline(ncmd, cmd, &cl);

    const char *db_path = ro->db ? ro->db : getenv("TFTAP_DB");
    if (db_path == NULL || db_path[0] == '\0')
        db_path = STORE_DEFAULT_PATH;
    if ((exe = wrap_self_exe()) == NULL || (db = wrap_abspath(db_path)) == NULL ||
        (cwd = getcwd(NULL, 0)) == NULL) {
        cli_error("cannot find this program's or the current directory's path: %s",
                  strerror(errno));
        goto cleanup;
    }
    if (ro->naux_env && (aux_env = run_env_with(ro->aux_env, ro->naux_env)) == NULL) {
        cli_error("out of memory");
        goto cleanup;
    }
    if ((log_path = log_path_for(db)) != NULL)
        log_size = file_size(log_path);
    if ((workdir = realpath(cl.chdir ? cl.chdir : ".", NULL)) == NULL) {
        cli_error("cannot resolve -chdir=%s: %s", cl.chdir, strerror(errno));
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

    if (wrap_discover(workdir, cli, &set, &err) != 0) {
        cli_error("%s", tftap_buf_cstr(&err));
        goto cleanup;
    }
    /* tftap replay: its providers stand in for every one the directory
     * uses, whatever the command (with them, init installs nothing). */
    if (ro->providers != NULL && wrap_set_replace(&set, ro->providers, ro->nproviders) != 0) {
        cli_error("out of memory");
        goto cleanup;
    }
    wrapped = set.n > 0 && (ro->providers != NULL || !installs_providers(&cl));
    if (set.shims && wrapped)
        /* A config exported by `tftap wrap`: its shims stand aside for
         * ours, or every call would be recorded twice. */
        cli_error("%s is a tftap wrap config: this run's shims replace its %zu, each call is "
                  "recorded once, in this run",
                  set.user_config, set.shims);
    if (set.missing && wrapped)
        cli_error("%zu provider(s) not installed, not recorded (first: %s); run '%s init'",
                  set.missing, set.missing_first, cli);
    if (wrapped) {
        /* The shims' directory, and in both modes where each proxy's
         * recorder holds its lock until the record is written. */
        const char *tmpdir = getenv("TMPDIR");
        tftap_buf t = TFTAP_BUF_INIT;
        tftap_buf_printf(&t, "%s/tftap-run-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
        tftap_buf_cstr(&t);
        tmp = tftap_buf_failed(&t) ? NULL : tftap_buf_take(&t, NULL);
        tftap_buf_done(&t);
        if (tmp == NULL || mkdtemp(tmp) == NULL) {
            cli_error("cannot create a temporary directory: %s", strerror(errno));
            free(tmp);
            tmp = NULL;
            goto cleanup;
        }
        o.tftap_exe = exe;
        o.db = db;
        if (!reattach && wrap_write(&set, tmp, &o, &config, &err) != 0) {
            cli_error("%s", tftap_buf_cstr(&err));
            goto cleanup;
        }
    }

    if (is_cli)
        version = cli_version_remembered(cmd[0]);
    /* The run row; a database we cannot use never stops the user's command. */
    int rc = store_open(db, STORE_OPEN_CREATE, &s);
    if (rc == 0)
        rc = store_run_begin(s, cmd[0], ncmd - 1, (const char *const *)cmd + 1, workdir, cli,
                             version, &run_id);
    if (rc != 0) {
        /* Nothing could be recorded under this run (a full disk, an
         * unwritable directory): run the command exactly as without tftap,
         * so that this line is all the user sees of us, not one more per
         * provider process. */
        cli_error("cannot record into %s (%s); running the command unrecorded", STORE_SHOWN(db),
                  s                                              ? store_errmsg(s)
                  : store_path_is_url(db) && *store_open_error() ? store_open_error()
                                                                 : tftap_strerror(rc));
        run_id = 0;
        wrapped = 0;
        store_close(s);
        s = NULL;
    }
    /* Otherwise kept open through the command: the last connection to
     * close checkpoints the WAL (two fsyncs) before the command could
     * start, and the end of the run would open it again. Not with
     * --reattach: its proxies are forks of this process, which must not
     * inherit an open SQLite connection (their recorders open the same
     * file, and SQLite's locks are per process). */
    if (reattach) {
        store_close(s);
        s = NULL;
    }

    char *add[5];
    size_t nadd = 0;
    if (wrapped && reattach) {
        o.tftap_exe = exe;
        o.db = db;
        procs = calloc(set.n, sizeof *procs);
        if (procs == NULL) {
            cli_error("out of memory");
            goto cleanup;
        }
        if (reattach_start(&set, &o, run_id, tmp, procs, &reattach_json, &err) != 0) {
            cli_error("%s", tftap_buf_cstr(&err));
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
            cli_error("out of memory");
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
        cli_error("database path too long: %s", STORE_SHOWN(db));
        goto cleanup;
    }
    add[nadd++] = env_db;
    if (run_id > 0) {
        snprintf(env_run, sizeof env_run, "TFTAP_RUN_ID=%lld", (long long)run_id);
        add[nadd++] = env_run;
    }
    if (wrapped) {
        if (snprintf(env_dir, sizeof env_dir, "TFTAP_RUN_DIR=%s", tmp) >= (int)sizeof env_dir) {
            cli_error("temporary path too long: %s", tmp);
            goto cleanup;
        }
        add[nadd++] = env_dir;
    }
    if (wrapped && !reattach) {
        if (snprintf(env_cfg, sizeof env_cfg, "TF_CLI_CONFIG_FILE=%s", config) >=
            (int)sizeof env_cfg) {
            cli_error("temporary path too long: %s", config);
            goto cleanup;
        }
        add[nadd++] = env_cfg;
    }
    if ((env = run_env_with(add, nadd)) == NULL) {
        cli_error("out of memory");
        goto cleanup;
    }

    int match = wrapped && !no_match && run_id > 0 && matches_addresses(&cl);
    int have_before = match && state_before(cmd[0], aux_env, workdir, cmd + 1, &before) == 0;
    code = run_attached(cmd, env);
    if (code < 0) {
        cli_error("cannot run %s: %s", cmd[0], strerror(errno));
        code = 127;
    }
    /* Only tofu or terraform is asked (a script or make does not know
     * `version -json`), and a binary an earlier run asked not again. */
    if (run_id > 0 && is_cli && version == NULL)
        cli_version_start(cmd[0], &ver);
    /* The providers outlive the CLI in reattach mode: end them (and flush
     * their records) before the run is closed. */
    reattach_stop(procs, nprocs);
    nprocs = 0;
    /* The record is final only once every recorder has written what its
     * proxy relayed: the run's end, its gaps and the address matching
     * come after. */
    if (wrapped)
        wrap_recorders_wait(tmp, recorder_wait_ms(), 1000);
    if (log_path != NULL)
        report_log(log_path, log_size);

    if (run_id > 0) {
        int64_t lost = 0;
        /* A saved plan exists only when planning succeeded; any other
         * command may have changed the state, even when it failed. */
        int plans = match && strcmp(cl.sub, "plan") == 0;
        int after = plans ? planfile != NULL && (code == 0 || code == 2) : 1;
        int opened = s != NULL || store_open(db, 0, &s) == 0;
        int ended = opened && store_run_end(s, run_id, code) == 0;
        if (opened && !ended) {
            /* A connection kept through a long command may have gone (a
             * server restarted meanwhile): once more on a fresh one. */
            store_close(s);
            s = NULL;
            opened = store_open(db, 0, &s) == 0;
            ended = opened && store_run_end(s, run_id, code) == 0;
        }
        if (!ended) {
            /* Unavailable (a server restarting): never the user's problem
             * beyond this line; the rest is written when it is back. */
            tftap_buf out = TFTAP_BUF_INIT;
            analysis_match_doc docs[2];
            size_t ndocs = match ? match_docs(cmd[0], aux_env, workdir, plans ? planfile : NULL,
                                              have_before, &before, after, &out, docs)
                                 : 0;
            store_close(s);
            s = NULL;
            if (version == NULL)
                version = cli_version_finish(cmd[0], &ver);
            int *fds = NULL;
            size_t nfds = wrapped ? wrap_recorder_locks_open(tmp, &fds) : 0;
            unsigned wait_ms = finish_wait_ms();
            if (finish_later(db, run_id, code, version, docs, ndocs, fds, nfds, wait_ms) == 0)
                cli_error("cannot record the end of run %lld into %s now: it is recorded when "
                          "the database is back (tftap keeps trying for %u %s in the background)",
                          (long long)run_id, STORE_SHOWN(db),
                          wait_ms >= 60000 ? wait_ms / 60000 : wait_ms / 1000,
                          wait_ms >= 60000 ? "min" : "s");
            else
                cli_error("cannot record the exit code into %s", STORE_SHOWN(db));
            free(fds);
            tftap_buf_done(&out);
            goto cleanup;
        }
        if (wrapped) {
            /* A recorder that found the database away when its provider
             * ended keeps its part under a shared lock; the database is
             * back now, so it writes it within a retry (a second): wait a
             * little, so that its calls and gaps are counted and matched. */
            int *fds = NULL;
            size_t nfds = wrap_recorder_locks_open(tmp, &fds);
            (void)wrap_recorder_locks_wait_exclusive(fds, nfds, RUN_CATCHUP_MS);
            free(fds);
        }
        if (store_run_get(s, run_id, run_lost, &lost) == 0 && lost > 0)
            /* The recorders' own warnings go to their log, not to the
             * terminal: say it here, once. */
            cli_error("the record of run %lld has gaps: %lld events lost while %s could not be "
                      "written (tftap runs)",
                      (long long)run_id, (long long)lost, STORE_SHOWN(db));
        struct checkpointer ckpt = {0};
        checkpointer_start(&ckpt, db);
        struct check_reader reader = {0};
        if (match) {
            /* An apply's changes are read again after the matching (their
             * replacements are paired by address): no reading beside. */
            if (strcmp(cl.sub, "apply") != 0 && strcmp(cl.sub, "destroy") != 0)
                check_reader_start(&reader, db, run_id);
            tftap_buf out = TFTAP_BUF_INIT;
            analysis_match_doc docs[2];
            size_t ndocs = match_docs(cmd[0], aux_env, workdir, plans ? planfile : NULL,
                                      have_before, &before, after, &out, docs);
            if (match_apply(s, run_id, docs, ndocs) != 0)
                cli_error("matching calls to addresses failed: %s", store_errmsg(s));
            tftap_buf_done(&out);
        }
        analysis_check_pass *read = check_reader_join(&reader);
        cli_check_summary(s, run_id, read);
        analysis_check_pass_free(read);
        if (version == NULL)
            version = cli_version_finish(cmd[0], &ver);
        if (version != NULL)
            (void)store_run_set_cli_version(s, run_id, version); /* for display only */
        checkpointer_join(&ckpt);
        store_close(s);
        s = NULL;
    }

cleanup:
    store_close(s);
    if (ver.pid > 0) {
        tftap_buf discard = TFTAP_BUF_INIT;
        capture_finish(&ver, 0, &discard);
        tftap_buf_done(&discard);
    }
    if (procs != NULL) {
        reattach_stop(procs, nprocs);
        free(procs);
    }
    tftap_buf_done(&reattach_json);
    tftap_buf_done(&before);
    free(env_reattach);
    if (tmp != NULL) {
        wrap_clean(&set, tmp);
        wrap_recorder_locks_clean(tmp);
        if (rmdir(tmp) != 0)
            cli_error("could not remove %s: %s", tmp, strerror(errno));
    }
    wrap_set_done(&set);
    tftap_buf_done(&err);
    free(exe);
    free(db);
    free(workdir);
    free(cwd);
    free(version);
    free(tmp);
    free(config);
    free(env);
    free(aux_env);
    free(planfile);
    free(log_path);
    return code;
}
