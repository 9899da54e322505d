/* Signals for the command tftap runs, as they would reach it without tftap.
 *
 * The command stays in tftap's process group, as it would be in the shell's
 * job without tftap: whatever is sent to the group (the terminal's Ctrl-C, a
 * CI runner's cancel, `kill -INT -- -PGID`, timeout(1)) reaches it directly.
 * tftap must pass on only what was sent to it alone: tofu reads a second
 * SIGINT as "stop now" and then skips writing its state.
 *
 * The kernel does not say whether a kill(2) named a process or its group, so
 * a sentinel tells: a child of ours that stays in the group with the signals
 * blocked. A signal pending at the sentinel was sent to the group. What
 * reaches tftap is held for a moment (SIGNAL_GRACE_MS) and passed on once
 * unless the sentinel got a copy meanwhile: timeout(1) and some CI runners
 * send to the process and then to its group, one intent in two calls, and
 * then the command has it from the group. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/launch_int.h"

/* How long a signal sent to tftap alone waits for its group's copy. */
#define SIGNAL_GRACE_MS 200
/* ... when its sender is in tftap's own group, as timeout(1) is (it makes
 * the group): such a sender is the one that signals the group next, and a
 * busy machine may hold it between its two kill(2)s for longer than the
 * short grace. Passing it on too early is a second signal for the CLI. */
#define SIGNAL_GRACE_SAME_GROUP_MS 2000
/* How often the sentinel is looked at while a signal waits. */
#define SIGNAL_POLL_MS 5

static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NRELAYED (sizeof relayed / sizeof relayed[0])
_Static_assert(NRELAYED == sizeof((struct run_signals *)0)->old / sizeof(struct sigaction),
               "a saved disposition per relayed signal");

struct received {
    int sig;
    int code;
    pid_t sender; /* for kill(2) (code SI_USER), else 0 */
};

static int self_pipe[2] = {-1, -1};

/* Async-signal-safe: only a write of what came. */
static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    int saved = errno;
    struct received r = {sig, info != NULL ? info->si_code : SI_USER, 0};
    if (info != NULL && info->si_code == SI_USER)
        r.sender = info->si_pid;
    ssize_t w = write(self_pipe[1], &r, sizeof r);
    (void)w; /* a full pipe holds plenty already: a wake-up is all it is */
    errno = saved;
}

static sigset_t relayed_set(void)
{
    sigset_t s;
    sigemptyset(&s);
    for (size_t i = 0; i < NRELAYED; i++)
        sigaddset(&s, relayed[i]);
    return s;
}

/* The sentinel: blocks the relayed signals and, each time it is asked,
 * takes what is pending off (so the next group signal shows) and says which
 * it took: bit sig-1 of a 64-bit mask. */
static void sentinel_main(int cmd_fd, int ack_fd, pid_t parent)
{
    sigset_t s = relayed_set();
    sigprocmask(SIG_BLOCK, &s, NULL);
    for (size_t i = 0; i < NRELAYED; i++)
        signal(relayed[i], SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
    prctl(PR_SET_NAME, "tftap-sentinel");
    /* Hold nothing of the command's: a CI runner waits for EOF on its
     * output, and the sentinel must not keep a pipe open. */
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
    }
    if (dup2(cmd_fd, 3) < 0 || dup2(ack_fd, 4) < 0)
        _exit(1);
    for (int fd = 5; fd < 1024; fd++)
        close(fd);
    struct timespec zero = {0, 0};
    char c;
    while (read(3, &c, 1) == 1) {
        uint64_t took = 0;
        int sig;
        while ((sig = sigtimedwait(&s, NULL, &zero)) > 0)
            took |= UINT64_C(1) << (sig - 1);
        if (write(4, &took, sizeof took) != (ssize_t)sizeof took)
            _exit(1);
    }
    _exit(0);
}

int run_signals_start(struct run_signals *rs)
{
    int cmd[2], ack[2];
    memset(rs, 0, sizeof *rs);
    rs->sentinel = -1;
    rs->cmd_fd = rs->ack_fd = -1;
    if (pipe2(self_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        self_pipe[0] = self_pipe[1] = -1;
        return -1;
    }
    /* The sentinel first, so it never sees our handlers. Without one,
     * signals are passed on by the old rule (only what kill(2) sent). */
    if (pipe2(cmd, O_CLOEXEC) == 0) {
        if (pipe2(ack, O_CLOEXEC) == 0) {
            pid_t parent = getpid();
            pid_t pid = fork();
            if (pid == 0)
                sentinel_main(cmd[0], ack[1], parent);
            close(cmd[0]);
            close(ack[1]);
            if (pid > 0) {
                rs->sentinel = pid;
                rs->cmd_fd = cmd[1];
                rs->ack_fd = ack[0];
            } else {
                close(cmd[1]);
                close(ack[0]);
            }
        } else {
            close(cmd[0]);
            close(cmd[1]);
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NRELAYED; i++)
        sigaction(relayed[i], &sa, &rs->old[i]);
    sa.sa_flags |= SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, &rs->old_chld);
    rs->installed = 1;
    return 0;
}

void run_signals_child(const struct run_signals *rs)
{
    if (!rs->installed)
        return;
    for (size_t i = 0; i < NRELAYED; i++)
        sigaction(relayed[i], &rs->old[i], NULL);
    sigaction(SIGCHLD, &rs->old_chld, NULL);
}

/* Have the sentinel take the group's copies pending at it and say which
 * (bit sig-1); 0 when none or it cannot be told. One exchange, so that a
 * copy arriving meanwhile is either taken and told or left for the next. */
static uint64_t sentinel_take(struct run_signals *rs)
{
    uint64_t took = 0;
    if (write(rs->cmd_fd, "t", 1) != 1)
        return 0;
    struct pollfd p = {rs->ack_fd, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0 || read(rs->ack_fd, &took, sizeof took) != (ssize_t)sizeof took)
        return 0;
    return took;
}

/* How long what came is held for its group's copy. */
static int grace_for(const struct received *got)
{
    if (got->code == SI_USER && got->sender > 0 && got->sender != getpid() &&
        getpgid(got->sender) == getpgrp())
        return SIGNAL_GRACE_SAME_GROUP_MS;
    return SIGNAL_GRACE_MS;
}

/* Is a signal held, or a terminal's copy not yet taken off the sentinel?
 * Then the sentinel is asked every SIGNAL_POLL_MS. */
static int asking(const int64_t held_until[NRELAYED], const int64_t terminal_at[NRELAYED])
{
    for (size_t i = 0; i < NRELAYED; i++)
        if (held_until[i] != 0 || terminal_at[i] != 0)
            return 1;
    return 0;
}

int run_signals_wait(struct run_signals *rs, pid_t pid, int *status)
{
    if (self_pipe[0] < 0) {
        /* Nothing could be set up: signals take their old course. */
        while (waitpid(pid, status, 0) < 0)
            if (errno != EINTR)
                return -1;
        return 0;
    }
    /* Per relayed signal, the burst that came: until when it is held (0:
     * none), and whether the group got a copy meanwhile. The copies of one
     * burst (timeout's two, say) are one signal to pass on or not. */
    int64_t held_until[NRELAYED] = {0};
    int group_got[NRELAYED] = {0};
    /* When the sentinel took a group's copy of a signal no burst held
     * yet (tftap's own copy still on its way): the burst it starts soon
     * after is that group signal's. */
    int64_t taken_early[NRELAYED] = {0};
    /* When a copy the terminal sent to the group came (Ctrl-C): the
     * sentinel has one too, to be taken off and not counted for a later
     * signal. */
    int64_t terminal_at[NRELAYED] = {0};
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;

        struct pollfd p = {self_pipe[0], POLLIN, 0};
        if (poll(&p, 1, asking(held_until, terminal_at) ? SIGNAL_POLL_MS : -1) < 0 &&
            errno != EINTR)
            return -1;

        struct received got;
        while (read(self_pipe[0], &got, sizeof got) == (ssize_t)sizeof got) {
            size_t i = 0;
            while (i < NRELAYED && relayed[i] != got.sig)
                i++;
            if (i == NRELAYED)
                continue; /* SIGCHLD: look at the child again */
            /* The terminal sends to its foreground group: the command is
             * in ours, so it has this one already. So has the sentinel:
             * its copy is taken off below (or was, just before). */
            if (got.code == SI_KERNEL) {
                if (taken_early[i] != 0)
                    taken_early[i] = 0;
                else
                    terminal_at[i] = tftap_mono_ms();
                continue;
            }
            if (rs->sentinel <= 0) {
                if (got.code <= 0)
                    kill(pid, got.sig);
                continue;
            }
            if (held_until[i] == 0) {
                /* Passed on in the order they came: never decided before
                 * one that came earlier, whose grace may be longer. */
                int64_t now = tftap_mono_ms(), until = now + grace_for(&got);
                for (size_t j = 0; j < NRELAYED; j++)
                    if (held_until[j] >= until)
                        until = held_until[j] + 1;
                held_until[i] = until;
                group_got[i] = taken_early[i] != 0 && now - taken_early[i] <= SIGNAL_GRACE_MS;
                taken_early[i] = 0;
            }
        }
        int64_t now = tftap_mono_ms();
        /* Every signal the sentinel took is told at once: two sent to the
         * group together are two group signals, neither passed on. */
        uint64_t took = asking(held_until, terminal_at) ? sentinel_take(rs) : 0;
        for (size_t i = 0; i < NRELAYED; i++) {
            if (took & (UINT64_C(1) << (relayed[i] - 1))) {
                if (terminal_at[i] != 0)
                    terminal_at[i] = 0;
                else if (held_until[i] != 0)
                    group_got[i] = 1;
                else
                    taken_early[i] = now;
            }
            /* Never seen at the sentinel (it could not be asked): let go. */
            if (terminal_at[i] != 0 && now - terminal_at[i] > SIGNAL_GRACE_MS)
                terminal_at[i] = 0;
        }
        for (size_t i = 0; i < NRELAYED; i++) {
            if (held_until[i] == 0)
                continue;
            if (now >= held_until[i]) {
                held_until[i] = 0;
                if (!group_got[i])
                    kill(pid, relayed[i]);
            }
        }
    }
}

/* The command's exit code, for on_sigbus. */
static volatile sig_atomic_t kept_code;

/* Async-signal-safe: a line and the command's code. A write to a page of
 * SQLite's mapped -shm file that the file refuses (a filesystem turned
 * read-only under us, an immutable file) is a SIGBUS: the record suffers,
 * never the command's exit code. Bugs (SIGSEGV) stay crashes, for the
 * sanitizers and the report. */
static void on_sigbus(int sig)
{
    (void)sig;
    static const char line[] =
        "tftap: the database's files refused a write (SIGBUS) while the end of the run was "
        "recorded: the run may stay without its end in the record; exiting with the "
        "command's exit code\n";
    ssize_t w = write(STDERR_FILENO, line, sizeof line - 1);
    (void)w;
    _exit(kept_code);
}

void run_signals_keep_code(int code)
{
    kept_code = code;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

void run_signals_stop(struct run_signals *rs)
{
    if (rs->installed) {
        for (size_t i = 0; i < NRELAYED; i++)
            sigaction(relayed[i], &rs->old[i], NULL);
        sigaction(SIGCHLD, &rs->old_chld, NULL);
        rs->installed = 0;
    }
    if (rs->sentinel > 0) {
        close(rs->cmd_fd); /* EOF: it exits */
        close(rs->ack_fd);
        kill(rs->sentinel, SIGKILL);
        while (waitpid(rs->sentinel, NULL, 0) < 0 && errno == EINTR)
            ;
        rs->sentinel = -1;
    }
    for (int i = 0; i < 2; i++) {
        if (self_pipe[i] >= 0)
            close(self_pipe[i]);
        self_pipe[i] = -1;
    }
}
