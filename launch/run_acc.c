/* launch: acceptance tests through `tftap run` (docs/acceptance-tests.md).
 *
 * terraform-plugin-testing (and terraform-plugin-sdk/v2's harness) serves
 * the provider under test in the test process and execs the CLI named by
 * TF_ACC_TERRAFORM_PATH for every command of every test step, handing it
 * the provider through TF_REATTACH_PROVIDERS. `tftap run` around a command
 * that is not itself tofu or terraform (go test, make) points
 * TF_ACC_TERRAFORM_PATH at a front: a script in the run's directory that
 * runs `tftap run --front DIR -- REAL_CLI ARGS...`, one step run per CLI
 * command, recorded under the parent run, with a relay in front of each
 * reattached provider (run.c, run_reattach.c).
 *
 * Naming. The harness tells the CLI neither the test nor the step. The
 * test: the harness gives every CLI command of a test TF_LOG_PATH =
 * TF_LOG_PATH_MASK with %s replaced by the test's name ('/' of subtests as
 * "__"); tftap sets a mask of its own when the user has none, and reads the
 * name back. The step: each step writes the test's configuration anew
 * (terraform_plugin_test.tf, or .tf.json, in the working directory, even
 * when unchanged: a new modification time), so a configuration file not seen before in this
 * test starts the next step; a command in one seen before (the destroy
 * after the last step, in the first working directory again after an
 * import step's own) belongs to the step that wrote it. An `init` in a new
 * configuration is the set-up of the step that follows it and counts none
 * itself (a test's providers are set up before its first step, a step's
 * own providers in its configuration before it runs). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/launch_int.h"

#define STEP_STATE_MAX (1u << 20)
#define TEST_NAME_MAX 1024

/* The file the harness writes each step's configuration into. */
#define HARNESS_CONFIG "terraform_plugin_test.tf"

/* An executable named name on PATH (absolute, heap), or NULL. */
static char *on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        return NULL;
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        if (n > 0 && path[0] == '/') {
            tftap_buf p = TFTAP_BUF_INIT;
            tftap_buf_printf(&p, "%.*s/%s", (int)n, path, name);
            const char *c = tftap_buf_cstr(&p);
            struct stat st;
            if (!tftap_buf_failed(&p) && stat(c, &st) == 0 && S_ISREG(st.st_mode) &&
                access(c, X_OK) == 0) {
                char *r = tftap_buf_take(&p, NULL);
                tftap_buf_done(&p);
                return r;
            }
            tftap_buf_done(&p);
        }
        if (colon == NULL)
            break;
        path = colon + 1;
    }
    return NULL;
}

char *acc_real_cli(void)
{
    const char *user = getenv("TF_ACC_TERRAFORM_PATH");
    if (user != NULL && user[0] != '\0') {
        char *abs = realpath(user, NULL);
        return abs;
    }
    /* The harness installs this version itself when it is set: that path
     * is not known before the tests start, so the front stays out. */
    const char *ver = getenv("TF_ACC_TERRAFORM_VERSION");
    if (ver != NULL && ver[0] != '\0')
        return NULL;
    char *cli = on_path("terraform");
    return cli != NULL ? cli : on_path("tofu");
}

/* Write text into dir/name with mode; 0 or -1 (errno). */
static int write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    tftap_buf p = TFTAP_BUF_INIT;
    tftap_buf_printf(&p, "%s/%s", dir, name);
    int fd =
        tftap_buf_failed(&p)
            ? -1
            : open(tftap_buf_cstr(&p), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    tftap_buf_done(&p);
    if (fd < 0)
        return -1;
    int rc = tftap_write_all(fd, text, strlen(text));
    if (close(fd) != 0)
        rc = -1;
    return rc;
}

int acc_front_write(const char *dir, const char *tftap_exe, const char *real_cli, const char *db,
                    int64_t parent_id, const struct launch_run_opts *ro, int own_mask,
                    char **front_path, tftap_buf *err)
{
    tftap_buf sh = TFTAP_BUF_INIT, p = TFTAP_BUF_INIT;
    int rc = -1;
    *front_path = NULL;
    /* The database's whole name (a PostgreSQL URI's password too) stays in
     * a file only this user reads, out of every environment and argv. */
    if (write_file(dir, "front-db", db, 0600) != 0) {
        tftap_buf_printf(err, "cannot write into %s: %s", dir, strerror(errno));
        goto out;
    }
    tftap_buf_printf(&p, "%s/steps", dir);
    if (tftap_buf_failed(&p) || mkdir(tftap_buf_cstr(&p), 0700) != 0) {
        tftap_buf_printf(err, "cannot create %s: %s", tftap_buf_cstr(&p), strerror(errno));
        goto out;
    }
    if (own_mask) {
        /* Where the harness (and the provider's own test log sink, which
         * creates the file) write per-test logs when asked to: ours. */
        tftap_buf_reset(&p);
        tftap_buf_printf(&p, "%s/logs", dir);
        if (tftap_buf_failed(&p) || mkdir(tftap_buf_cstr(&p), 0700) != 0) {
            tftap_buf_printf(err, "cannot create %s: %s", tftap_buf_cstr(&p), strerror(errno));
            goto out;
        }
    }
    tftap_buf_puts(&sh, "#!/bin/sh\n# tftap: each CLI command of an acceptance test step, "
                        "recorded (docs/acceptance-tests.md)\nexec ");
    launch_sh_quote(&sh, tftap_exe);
    tftap_buf_puts(&sh, " run --front ");
    launch_sh_quote(&sh, dir);
    tftap_buf_printf(&sh, " --parent %lld", (long long)parent_id);
    if (own_mask)
        tftap_buf_puts(&sh, " --own-log-mask");
    if (ro->record_sensitive)
        tftap_buf_puts(&sh, " --record-sensitive");
    if (ro->keep_raw)
        tftap_buf_puts(&sh, " --keep-raw");
    if (ro->no_match)
        tftap_buf_puts(&sh, " --no-match");
    tftap_buf_puts(&sh, " -- ");
    launch_sh_quote(&sh, real_cli);
    tftap_buf_puts(&sh, " \"$@\"\n");
    /* Named as the CLI it stands for: the harness shows the path. */
    const char *base = strrchr(real_cli, '/') ? strrchr(real_cli, '/') + 1 : real_cli;
    if (tftap_buf_failed(&sh) || write_file(dir, base, tftap_buf_cstr(&sh), 0700) != 0) {
        tftap_buf_printf(err, "cannot write the CLI front into %s: %s", dir, strerror(errno));
        goto out;
    }
    tftap_buf_reset(&p);
    tftap_buf_printf(&p, "%s/%s", dir, base);
    tftap_buf_cstr(&p);
    if (tftap_buf_failed(&p))
        goto out;
    *front_path = tftap_buf_take(&p, NULL);
    rc = 0;
out:
    tftap_buf_done(&sh);
    tftap_buf_done(&p);
    return rc;
}

/* The files directly in dir, then dir itself. */
static void remove_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

void acc_front_clean(const char *dir, const char *real_cli)
{
    static const char *const names[] = {"front-db"};
    tftap_buf p = TFTAP_BUF_INIT;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tftap_buf_reset(&p);
        tftap_buf_printf(&p, "%s/%s", dir, names[i]);
        unlink(tftap_buf_cstr(&p));
    }
    if (real_cli != NULL) {
        const char *base = strrchr(real_cli, '/') ? strrchr(real_cli, '/') + 1 : real_cli;
        tftap_buf_reset(&p);
        tftap_buf_printf(&p, "%s/%s", dir, base);
        unlink(tftap_buf_cstr(&p));
    }
    /* The step state and the harness's logs: one level of files each. */
    static const char *const subs[] = {"steps", "logs"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        tftap_buf_reset(&p);
        tftap_buf_printf(&p, "%s/%s", dir, subs[i]);
        remove_flat_dir(tftap_buf_cstr(&p));
    }
    tftap_buf_done(&p);
}

char *acc_front_db(const char *dir)
{
    tftap_buf p = TFTAP_BUF_INIT, text = TFTAP_BUF_INIT;
    char *db = NULL;
    tftap_buf_printf(&p, "%s/front-db", dir);
    if (!tftap_buf_failed(&p) && tftap_read_file(tftap_buf_cstr(&p), 65536, &text) == 0 &&
        text.len > 0 && memchr(text.data, '\0', text.len) == NULL) {
        tftap_buf_cstr(&text);
        db = tftap_buf_take(&text, NULL);
    }
    tftap_buf_done(&p);
    tftap_buf_done(&text);
    return db;
}

char *acc_test_name(void)
{
    const char *mask = getenv("TF_LOG_PATH_MASK");
    const char *path = getenv("TF_LOG_PATH");
    if (mask == NULL || path == NULL || path[0] == '\0')
        return NULL;
    const char *s = strstr(mask, "%s");
    if (s == NULL || strstr(s + 2, "%s") != NULL)
        return NULL;
    size_t pre = (size_t)(s - mask), suf = strlen(s + 2), n = strlen(path);
    if (n < pre + suf + 1 || strncmp(path, mask, pre) != 0 || strcmp(path + n - suf, s + 2) != 0)
        return NULL;
    size_t len = n - pre - suf;
    if (len > TEST_NAME_MAX)
        return NULL;
    char *name = malloc(len + 1);
    if (name != NULL) {
        memcpy(name, path + pre, len);
        name[len] = '\0';
    }
    return name;
}

/* What tells one step's configuration from another's: the working
 * directory and the harness's configuration file's identity (inode,
 * modification time to the nanosecond, size), or the directory's own when
 * there is no such file (another harness). */
static void config_stamp(const char *workdir, tftap_buf *out)
{
    tftap_buf p = TFTAP_BUF_INIT;
    struct stat st;
    tftap_buf_printf(&p, "%s/" HARNESS_CONFIG, workdir);
    int found = !tftap_buf_failed(&p) && stat(tftap_buf_cstr(&p), &st) == 0;
    if (!found) {
        /* terraform-plugin-sdk/v2's harness writes a JSON configuration
         * there instead (and removes the other). */
        tftap_buf_putc(&p, '.');
        tftap_buf_puts(&p, "json");
        found = !tftap_buf_failed(&p) && stat(tftap_buf_cstr(&p), &st) == 0;
    }
    if (!found && stat(workdir, &st) != 0)
        memset(&st, 0, sizeof st);
    tftap_buf_done(&p);
    char hex[65];
    tftap_sha256_hex(workdir, strlen(workdir), hex);
    tftap_buf_printf(out, "%.16s:%llx:%lld.%09ld:%lld", hex, (unsigned long long)st.st_ino,
                     (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, (long long)st.st_size);
}

int acc_step_of(const char *dir, const char *test, const char *workdir, int is_init)
{
    tftap_buf p = TFTAP_BUF_INIT, state = TFTAP_BUF_INIT, stamp = TFTAP_BUF_INIT;
    char hex[65];
    int step = 0, max = 0;
    /* Per test process and test: `go test ./...` runs a test binary per
     * package at once, and two packages may have tests of one name. The
     * front's parent is the process that ran the CLI, the harness's. */
    tftap_buf key = TFTAP_BUF_INIT;
    tftap_buf_printf(&key, "%ld/%s", (long)getppid(), test);
    tftap_sha256_hex(key.data ? key.data : "", key.len, hex);
    tftap_buf_done(&key);
    tftap_buf_printf(&p, "%s/steps/%.32s", dir, hex);
    config_stamp(workdir, &stamp);
    if (tftap_buf_failed(&p) || tftap_buf_failed(&stamp))
        goto out;
    int rc = tftap_read_file(tftap_buf_cstr(&p), STEP_STATE_MAX, &state);
    if (rc != 0 && !(rc == TFTAP_EIO && errno == ENOENT))
        goto out;
    /* One line per configuration seen: "STEP STAMP". */
    const char *t = tftap_buf_cstr(&state), *want = tftap_buf_cstr(&stamp);
    while (*t) {
        const char *nl = strchr(t, '\n');
        size_t len = nl ? (size_t)(nl - t) : strlen(t);
        char *end = NULL;
        long n = strtol(t, &end, 10);
        if (end != NULL && *end == ' ' && n > 0 && n < 1000000) {
            if (n > max)
                max = (int)n;
            size_t sl = len - (size_t)(end + 1 - t);
            if (sl == strlen(want) && memcmp(end + 1, want, sl) == 0)
                step = (int)n;
        }
        if (nl == NULL)
            break;
        t = nl + 1;
    }
    if (step > 0)
        goto out;
    step = max + 1;
    if (!is_init) {
        tftap_buf line = TFTAP_BUF_INIT;
        tftap_buf_printf(&line, "%d %s\n", step, want);
        int fd =
            open(tftap_buf_cstr(&p), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || tftap_buf_failed(&line) || tftap_write_all(fd, line.data, line.len) != 0)
            step = 0;
        if (fd >= 0)
            close(fd);
        tftap_buf_done(&line);
    }
out:
    tftap_buf_done(&p);
    tftap_buf_done(&state);
    tftap_buf_done(&stamp);
    return step;
}
