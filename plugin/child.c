/* plugin: a provider as a child process. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin.h"

/* vfork: the child borrows our memory until it execs. fork() would
 * write-protect every page of ours, and each one we then wrote (the relay,
 * the recorder's queues) would fault once: milliseconds, on the path of the
 * CLI starting its provider. A function of its own, which the child never
 * returns from, so that nothing of the caller's lives across vfork(). */
static pid_t spawn(const char *binary, char *const *argv, char *const *envp, int out_w,
                   int status_w)
{
    pid_t parent = getpid();
    pid_t pid = vfork();
    if (pid != 0)
        return pid;
    /* The child: only system calls from here to exec (it shares our memory;
     * signal dispositions and the mask are its own). A handler of ours must
     * never run here, on our memory, before the exec resets it: default
     * them all first, as posix_spawn does. */
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction old;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &old) != 0)
            continue;
        if (sig == SIGPIPE || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
            struct sigaction dfl = {.sa_handler = SIG_DFL};
            sigaction(sig, &dfl, NULL);
        }
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* It must not outlive us (the client only knows our pid), so it dies
     * with this thread; the getppid() check closes the race with our exit. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    if (dup2(out_w, STDOUT_FILENO) >= 0)
        execve(binary, argv, envp);
    int e = errno;
    ssize_t w = write(status_w, &e, sizeof e);
    (void)w;
    _exit(127);
}

int plugin_child_spawn(plugin_child *child, const char *binary, char *const *args, char **envp,
                       tftap_buf *err)
{
    int out[2] = {-1, -1}, status[2] = {-1, -1};
    char **argv = NULL;
    size_t nargs = 0;
    int rc = TFTAP_EIO;

    child->pid = -1;
    child->out_fd = -1;
    while (args != NULL && args[nargs] != NULL)
        nargs++;
    argv = calloc(nargs + 2, sizeof *argv);
    if (argv == NULL)
        return TFTAP_ENOMEM;
    argv[0] = (char *)binary;
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = args[i];

    /* status carries errno from a failed exec; CLOEXEC closes it on success. */
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
        if (err)
            tftap_buf_printf(err, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    pid_t pid = spawn(binary, argv, envp, out[1], status[1]);
    if (pid < 0) {
        if (err)
            tftap_buf_printf(err, "fork: %s", strerror(errno));
        goto cleanup;
    }

    close(out[1]);
    out[1] = -1;
    close(status[1]);
    status[1] = -1;
    child->pid = pid;

    int e = 0;
    ssize_t n;
    do
        n = read(status[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof e) {
        if (err)
            tftap_buf_printf(err, "cannot run provider %s: %s", binary, strerror(e));
        waitpid(pid, NULL, 0);
        child->pid = -1;
        rc = TFTAP_ECHILD;
        goto cleanup;
    }
    child->out_fd = out[0];
    out[0] = -1;
    rc = 0;

cleanup:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (status[i] >= 0)
            close(status[i]);
    }
    free(argv);
    return rc;
}

static void forward_signals(plugin_child *child, int sig_fd)
{
    struct signalfd_siginfo si;
    while (read(sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
            kill(child->pid, sig);
    }
}

int plugin_child_read_handshake(plugin_child *child, int sig_fd, int timeout_ms, char **line,
                                tftap_buf *err)
{
    tftap_buf acc = TFTAP_BUF_INIT;
    int64_t deadline = tftap_mono_ms() + timeout_ms;
    int rc;

    *line = NULL;
    for (;;) {
        char *nl = acc.len > 0 ? memchr(acc.data, '\n', acc.len) : NULL;
        if (nl != NULL) {
            size_t n = (size_t)(nl - acc.data);
            tftap_buf_reset(&child->pending);
            tftap_buf_append(&child->pending, nl + 1, acc.len - n - 1);
            *line = malloc(n + 1);
            if (*line == NULL || tftap_buf_failed(&child->pending)) {
                free(*line);
                *line = NULL;
                rc = TFTAP_ENOMEM;
                goto cleanup;
            }
            memcpy(*line, acc.data, n);
            (*line)[n] = '\0';
            rc = 0;
            goto cleanup;
        }
        if (acc.len > PLUGIN_HANDSHAKE_MAX) {
            if (err)
                tftap_buf_printf(err, "provider handshake line longer than %d bytes",
                                 PLUGIN_HANDSHAKE_MAX);
            rc = TFTAP_ELIMIT;
            goto cleanup;
        }
        int64_t left = deadline - tftap_mono_ms();
        if (left <= 0) {
            if (err)
                tftap_buf_printf(err, "provider printed no handshake within %d s",
                                 timeout_ms / 1000);
            rc = TFTAP_ELIMIT;
            goto cleanup;
        }
        struct pollfd pfd[2] = {{child->out_fd, POLLIN, 0}, {sig_fd, POLLIN, 0}};
        int pr = poll(pfd, sig_fd >= 0 ? 2 : 1, (int)left);
        if (pr < 0 && errno != EINTR) {
            if (err)
                tftap_buf_printf(err, "poll: %s", strerror(errno));
            rc = TFTAP_EIO;
            goto cleanup;
        }
        if (pr <= 0)
            continue;
        if (sig_fd >= 0 && (pfd[1].revents & POLLIN))
            forward_signals(child, sig_fd);
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char chunk[4096];
            ssize_t n = read(child->out_fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                if (err)
                    tftap_buf_printf(err, "reading provider stdout: %s", strerror(errno));
                rc = TFTAP_EIO;
                goto cleanup;
            }
            if (n == 0) {
                if (err)
                    tftap_buf_puts(err, "provider exited before its handshake");
                rc = TFTAP_ECHILD;
                goto cleanup;
            }
            tftap_buf_append(&acc, chunk, (size_t)n);
            if (tftap_buf_failed(&acc)) {
                rc = TFTAP_ENOMEM;
                goto cleanup;
            }
        }
    }

cleanup:
    tftap_buf_done(&acc);
    return rc;
}
