/* launch: tftap replay STEP, a recorded step of an acceptance test run again
 * (docs/acceptance-tests.md, "Replaying a step"). The step run kept the
 * files its command found in the harness's working directory (run_files,
 * run_workdir.c); they are laid out again in a directory of their own
 * and the step's command runs there, with every provider answered from
 * the recording and handed to the CLI through TF_REATTACH_PROVIDERS, as
 * the harness hands over the provider under test. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "store/store.h"

/* What the step run recorded of its command and its directory. */
struct step {
    char *command, *args_json, *cwd, *cli_name, *name;
    int has_exit_code, exit_code;
    size_t nfiles, nkept;
};

static int step_row(void *ctx, const store_run_row *row)
{
    struct step *st = ctx;
    st->command = strdup(row->command ? row->command : "");
    st->args_json = strdup(row->args_json ? row->args_json : "[]");
    st->cwd = row->cwd ? strdup(row->cwd) : NULL;
    st->cli_name = row->cli_name ? strdup(row->cli_name) : NULL;
    st->has_exit_code = row->has_exit_code;
    st->exit_code = row->exit_code;
    if (row->test_name != NULL) {
        tftap_buf n = TFTAP_BUF_INIT;
        tftap_buf_printf(&n, "%s / step ", row->test_name);
        if (row->test_step > 0)
            tftap_buf_printf(&n, "%d", row->test_step);
        else
            tftap_buf_putc(&n, '?');
        tftap_buf_cstr(&n);
        st->name = tftap_buf_failed(&n) ? NULL : tftap_buf_take(&n, NULL);
        tftap_buf_done(&n);
    }
    return st->command == NULL || st->args_json == NULL ? TFTAP_ENOMEM : 0;
}

static void step_done(struct step *st)
{
    free(st->command);
    free(st->args_json);
    free(st->cwd);
    free(st->cli_name);
    free(st->name);
    memset(st, 0, sizeof *st);
}

/* A kept file's name is one name at the top of the directory, printable. */
static int file_name_ok(const char *n)
{
    for (const unsigned char *c = (const unsigned char *)n; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    return n[0] != '\0' && strcmp(n, ".") != 0 && strcmp(n, "..") != 0 && strchr(n, '/') == NULL &&
           strlen(n) <= 255;
}

/* Text from a record, for one line of ours: control characters as '?'. */
static void one_line(tftap_buf *b, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        tftap_buf_putc(b, *c < 0x20 || *c == 0x7f ? '?' : (char)*c);
}

struct lay_out {
    const char *dir;
    struct step *st;
    int failed;
};

/* Write one kept file into the directory; one not kept is said. */
static int lay_file(void *ctx, const store_run_file *f)
{
    struct lay_out *l = ctx;
    tftap_buf q = TFTAP_BUF_INIT, p = TFTAP_BUF_INIT;
    l->st->nfiles++;
    if (!file_name_ok(f->name)) {
        tftap_buf_json_string(&q, f->name, strlen(f->name));
        launch_error("the recorded file %s is not a file name: left out", tftap_buf_cstr(&q));
        tftap_buf_done(&q);
        return 0;
    }
    if (f->content == NULL) {
        one_line(&q, f->note ? f->note : "no content");
        launch_error("note: %s was not kept (%s): the command runs without it", f->name,
                     tftap_buf_cstr(&q));
        tftap_buf_done(&q);
        return 0;
    }
    char hex[65];
    tftap_sha256_hex(f->content, f->content_len, hex);
    if (strcmp(hex, f->sha256) != 0) {
        launch_error("the recorded file %s does not match its digest: the record is damaged",
                     f->name);
        l->failed = 1;
        return 1;
    }
    tftap_buf_printf(&p, "%s/%s", l->dir, f->name);
    int fd =
        tftap_buf_failed(&p)
            ? -1
            : open(tftap_buf_cstr(&p), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int bad = fd < 0 || tftap_write_all(fd, f->content, f->content_len) != 0;
    if (fd >= 0 && close(fd) != 0)
        bad = 1;
    if (bad) {
        launch_error("cannot write %s: %s", tftap_buf_cstr(&p), strerror(errno));
        l->failed = 1;
    }
    tftap_buf_done(&p);
    l->st->nkept++;
    return bad;
}

/* The CLI a step runs: --cli when given; else the recorded one when it is
 * an executable here named like a CLI (a record names what runs: never
 * any other program); else the recorded CLI's name on PATH. */
static const char *step_cli(const struct step *st, const char *cli_opt)
{
    if (cli_opt != NULL)
        return cli_opt;
    const char *base = strrchr(st->command, '/') ? strrchr(st->command, '/') + 1 : st->command;
    if (st->command[0] == '/' && (strstr(base, "tofu") || strstr(base, "terraform")) &&
        access(st->command, X_OK) == 0)
        return st->command;
    return st->cli_name && strcmp(st->cli_name, "terraform") == 0 ? "terraform" : "tofu";
}

/* The step's command in dir: cli and the recorded arguments, the recorded
 * directory in them (`show DIR/tfplan`, `import -config=DIR`) made dir. */
static char **step_command(const struct step *st, const char *cli, const char *dir, int *ncmd)
{
    sj_doc *doc = NULL;
    if (sj_parse(st->args_json, strlen(st->args_json), 0, &doc) != 0)
        return NULL;
    const sj_node *args = sj_root(doc);
    if (args->kind != SJ_ARRAY) {
        sj_free(doc);
        return NULL;
    }
    char **cmd = calloc(args->n + 2, sizeof *cmd);
    size_t n = 0;
    int bad = cmd == NULL;
    if (!bad)
        bad = (cmd[n++] = strdup(cli)) == NULL;
    size_t cwdlen = st->cwd ? strlen(st->cwd) : 0;
    for (const sj_node *a = args->child; a != NULL && !bad; a = a->next) {
        if (a->kind != SJ_STRING || strlen(a->str) != a->len) {
            bad = 1;
            break;
        }
        tftap_buf b = TFTAP_BUF_INIT;
        const char *eq = strchr(a->str, '=');
        size_t at = a->str[0] == '-' && eq ? (size_t)(eq + 1 - a->str) : 0;
        const char *rest = a->str + at;
        if (cwdlen > 1 && strncmp(rest, st->cwd, cwdlen) == 0 &&
            (rest[cwdlen] == '\0' || rest[cwdlen] == '/')) {
            tftap_buf_append(&b, a->str, at);
            tftap_buf_puts(&b, dir);
            tftap_buf_puts(&b, rest + cwdlen);
        } else {
            tftap_buf_puts(&b, a->str);
        }
        tftap_buf_cstr(&b);
        cmd[n] = tftap_buf_failed(&b) ? NULL : tftap_buf_take(&b, NULL);
        tftap_buf_done(&b);
        bad = cmd[n++] == NULL;
    }
    sj_free(doc);
    if (bad) {
        for (size_t i = 0; cmd && i < n; i++)
            free(cmd[i]);
        free(cmd);
        return NULL;
    }
    *ncmd = (int)n;
    return cmd;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* Read the step's run and lay its directory out in dir. 0, or 1 after one
 * error line. */
static int lay_out_step(const char *path, int64_t run, const char *dir, struct step *st)
{
    store *s = NULL;
    int rc = store_open(path, STORE_OPEN_READONLY, &s);
    if (rc != 0) {
        launch_error("cannot open %s: %s", STORE_SHOWN(path),
                     s ? store_errmsg(s) : tftap_strerror(rc));
        store_close(s);
        return 1;
    }
    rc = store_run_get(s, run, step_row, st);
    struct lay_out l = {.dir = dir, .st = st};
    if (rc == 0 && st->command != NULL)
        rc = store_run_files_each(s, run, lay_file, &l);
    if (rc != 0 && !l.failed)
        launch_error("cannot read run %lld of %s: %s", (long long)run, STORE_SHOWN(path),
                     rc == TFTAP_ENOMEM ? "out of memory" : store_errmsg(s));
    store_close(s);
    return rc != 0 || l.failed;
}

/* tftap replay STEP: the directory of the step laid out again in --dir (or
 * a temporary directory), and the step's command run there with every
 * provider answered from the recording, each started once and handed to
 * the CLI through TF_REATTACH_PROVIDERS as the harness hands its provider. */
int launch_replay_step(struct launch_recorded *r, const struct launch_source *src,
                       const char *dir_opt, const char *cli_opt, struct launch_run_opts *ro)
{
    struct step st = {0};
    char *dir = NULL, *cwd = NULL, **cmd = NULL;
    int ncmd = 0, code = 1, made = 0, temporary = dir_opt == NULL;
    if ((cwd = getcwd(NULL, 0)) == NULL) {
        launch_error("cannot find the current directory: %s", strerror(errno));
        goto cleanup;
    }
    if (dir_opt != NULL) {
        if (mkdir(dir_opt, 0700) != 0 && errno != EEXIST) {
            launch_error("cannot create %s: %s", dir_opt, strerror(errno));
            goto cleanup;
        }
        dir = realpath(dir_opt, NULL);
        DIR *d = dir ? opendir(dir) : NULL;
        int empty = d != NULL;
        for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                empty = 0;
        if (d != NULL)
            closedir(d);
        if (!empty) {
            launch_error("--dir %s: %s", dir_opt,
                         dir == NULL || errno == ENOTDIR ? strerror(errno)
                                                         : "not empty (the step's files go there)");
            goto cleanup;
        }
    } else {
        if ((dir = launch_tempdir("step")) == NULL) {
            launch_error("cannot create a temporary directory: %s", strerror(errno));
            goto cleanup;
        }
    }
    made = 1;
    if (lay_out_step(src->path, src->run, dir, &st) != 0)
        goto cleanup;
    if (st.nfiles == 0) {
        launch_error("run %lld of %s kept no working directory: only an acceptance test's step "
                     "runs do (give a command: tftap replay RUN -- tofu ARGS...)",
                     (long long)src->run, STORE_SHOWN(src->path));
        goto cleanup;
    }
    if ((cmd = step_command(&st, step_cli(&st, cli_opt), dir, &ncmd)) == NULL || ncmd < 1) {
        launch_error("run %lld of %s: its recorded command cannot be read", (long long)src->run,
                     STORE_SHOWN(src->path));
        goto cleanup;
    }
    tftap_buf line = TFTAP_BUF_INIT;
    if (st.name != NULL) {
        tftap_buf_puts(&line, " (");
        one_line(&line, st.name);
        tftap_buf_putc(&line, ')');
    }
    tftap_buf_printf(&line, " in %s:", dir);
    for (int i = 0; i < ncmd; i++) {
        tftap_buf_putc(&line, ' ');
        one_line(&line, cmd[i]);
    }
    launch_error("replaying run %lld%s", (long long)src->run, tftap_buf_cstr(&line));
    tftap_buf_done(&line);
    if (chdir(dir) != 0) {
        launch_error("cannot enter %s: %s", dir, strerror(errno));
        goto cleanup;
    }
    ro->reattach = 1;
    ro->is_cli = 1;
    code = launch_replay(r, cmd, ncmd, src, ro, 1);
    if (chdir(cwd) != 0)
        launch_error("cannot return to %s: %s", cwd, strerror(errno));
    if (st.has_exit_code && code != st.exit_code)
        launch_error("note: exit code %d, the recorded step's was %d", code, st.exit_code);
cleanup:
    if (made && temporary && dir != NULL)
        (void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; cmd && i < ncmd; i++)
        free(cmd[i]);
    free(cmd);
    step_done(&st);
    free(dir);
    free(cwd);
    return code;
}
