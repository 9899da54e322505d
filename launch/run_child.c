/* launch: the child processes `tftap run` starts besides the user's command:
 * the command's environment, and helper commands whose output it reads
 * (`CLI show -json` for the address matching, `CLI version -json`). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/launch_int.h"

extern char **environ;

char **run_env_with(char *const *add, size_t nadd)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + nadd + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (size_t j = 0; j < nadd; j++) {
            size_t nl = strcspn(add[j], "=");
            replaced |= strncmp(environ[i], add[j], nl + 1) == 0;
        }
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < nadd; j++)
        env[k++] = add[j];
    env[k] = NULL;
    return env;
}

/* Start argv in dir (NULL: ours) with env (NULL: ours), stdout into a
 * pipe, stdin and stderr on /dev/null. 0, or -1 when it could not be
 * started. */
static int capture_start(char *const *argv, char *const *env, const char *dir, struct captured *c)
{
    int fds[2];
    c->pid = 0;
    c->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 2);
        }
        dup2(fds[1], 1);
        if (dir != NULL && chdir(dir) != 0)
            _exit(127);
        if (env != NULL)
            execvpe(argv[0], argv, env);
        else
            execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    c->pid = pid;
    c->fd = fds[0];
    return 0;
}

/* Its stdout into out (at most max bytes kept), then its exit status as
 * launch_run gives it, or -1 when it was not started. */
int capture_finish(struct captured *c, size_t max, tftap_buf *out)
{
    if (c->pid <= 0)
        return -1;
    char chunk[65536];
    for (;;) {
        ssize_t n = read(c->fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (out->len + (size_t)n <= max)
            tftap_buf_append(out, chunk, (size_t)n);
    }
    close(c->fd);
    c->fd = -1;
    int st;
    pid_t pid = c->pid;
    c->pid = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Forked twice, the work in the grandchild: init's child at once, so
 * neither our zombie nor a SIGCHLD of ours; the caller learns from the
 * intermediate's exit whether it was started. */
int run_detach(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* Its own child does the work: init's, so nobody waits for it. */
        pid_t bg = fork();
        if (bg != 0)
            _exit(bg < 0 ? 1 : 0); /* the caller learns whether there is one */
        setsid();
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
            if (devnull > STDERR_FILENO)
                close(devnull);
        }
        return 0;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 1 : -1;
}

/* argv run with stdout captured into out (at most max bytes kept) and
 * stderr discarded, with env (NULL = ours): the exit status as launch_run
 * gives it, or -1 when it could not be started. */
int capture(char *const *argv, char *const *env, const char *dir, size_t max, tftap_buf *out)
{
    struct captured c;
    if (capture_start(argv, env, dir, &c) != 0)
        return -1;
    return capture_finish(&c, max, out);
}

/* `CLI version -json`, started (the CLI's start-up is most of its cost:
 * it runs beside tftap's own work after the command) and read later. */
void run_version_start(const char *cli_path, struct captured *c)
{
    char *argv[] = {(char *)cli_path, "version", "-json", NULL};
    if (capture_start(argv, NULL, NULL, c) != 0)
        c->pid = 0;
}

/* The CLI's version it printed, or NULL; remembered for the next run
 * (cli_version.c). A CLI not started (c->pid 0) is read as nothing. */
char *run_version_finish(const char *cli_path, struct captured *c)
{
    tftap_buf out = TFTAP_BUF_INIT;
    char *v = NULL;
    if (capture_finish(c, VERSION_MAX, &out) == 0 && !tftap_buf_failed(&out)) {
        sj_doc *doc = NULL;
        if (sj_parse(out.data, out.len, 0, &doc) == 0) {
            const sj_node *tv = sj_get(sj_root(doc), "terraform_version");
            if (tv && tv->kind == SJ_STRING && !memchr(tv->str, '\0', tv->len))
                v = strdup(tv->str);
        }
        sj_free(doc);
    }
    tftap_buf_done(&out);
    if (v != NULL)
        run_version_remember(cli_path, v);
    return v;
}
