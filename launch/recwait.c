/* Knowing when a run's record is complete. Every shim of a `tftap run`
 * takes a lock file in the run's directory before its provider starts; its
 * recorder process inherits the locked file (recorder/process.c) and holds it
 * until it has written everything and exits, however it exits (flock locks
 * go with the last open descriptor, SIGKILL included). `tftap run` then
 * takes each lock in turn: when it has them all, every call relayed is in
 * the database. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "recorder/recorder.h"
#include "store/store.h"

#define LOCK_PREFIX "rec-"
#define LOCK_SUFFIX ".lock"
#define MAX_LOCKS 4096

int launch_recorder_lock(const char *run_dir, const char *provider)
{
    char path[4096], final[4096];
    /* A fresh file each time: a reused pid must not find the lock an
     * earlier shim's recorder still holds. It is made under a name waiters
     * do not look at, locked, and only then given its lock name: a waiter
     * never finds it unlocked and counts a recorder that has not begun as
     * done. */
    int n =
        snprintf(path, sizeof path, "%s/" LOCK_PREFIX "%ld-XXXXXX.new", run_dir, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof path - strlen(LOCK_SUFFIX)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkostemps(path, (int)strlen(".new"), O_CLOEXEC);
    if (fd < 0)
        return -1;
    memcpy(final, path, (size_t)n - strlen(".new"));
    memcpy(final + n - strlen(".new"), LOCK_SUFFIX, strlen(LOCK_SUFFIX) + 1);
    if (flock(fd, LOCK_EX) != 0 || rename(path, final) != 0) {
        close(fd);
        unlink(path);
        return -1;
    }
    /* Who holds it, for the message of a waiter that gives up. */
    char what[600];
    int k = snprintf(what, sizeof what, "%s (shim pid %ld)", provider ? provider : "a provider",
                     (long)getpid());
    if (k > 0 && write(fd, what, (size_t)k < sizeof what ? (size_t)k : sizeof what - 1) < 0) {
        /* the name is for messages only */
    }
    return fd;
}

static int is_lock_name(const char *name)
{
    size_t n = strlen(name), p = strlen(LOCK_PREFIX), s = strlen(LOCK_SUFFIX);
    return n > p + s && strncmp(name, LOCK_PREFIX, p) == 0 &&
           strcmp(name + n - s, LOCK_SUFFIX) == 0;
}

struct held {
    int fd;
    char name[256];
};

/* The lock files of run_dir, opened (not locked yet). */
static size_t open_locks(const char *run_dir, struct held *v, size_t max)
{
    DIR *d = opendir(run_dir);
    size_t n = 0;
    if (d == NULL)
        return 0;
    struct dirent *e;
    while (n < max && (e = readdir(d)) != NULL) {
        if (!is_lock_name(e->d_name))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        v[n].fd = fd;
        ssize_t r = pread(fd, v[n].name, sizeof v[n].name - 1, 0);
        v[n].name[r > 0 ? r : 0] = '\0';
        if (r <= 0)
            snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

size_t wrap_recorders_wait(const char *run_dir, unsigned timeout_ms, unsigned progress_ms)
{
    struct held *v = calloc(MAX_LOCKS, sizeof *v);
    if (v == NULL)
        return 0;
    size_t n = open_locks(run_dir, v, MAX_LOCKS), left = n;
    int64_t start = tftap_mono_ms();
    int said = 0;
    long pause_us = 200;
    for (;;) {
        left = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i].fd < 0)
                continue;
            if (flock(v[i].fd, LOCK_SH | LOCK_NB) == 0) {
                close(v[i].fd);
                v[i].fd = -1;
            } else {
                left++;
            }
        }
        if (left == 0)
            break;
        int64_t waited = tftap_mono_ms() - start;
        if (waited >= timeout_ms) {
            tftap_buf names = TFTAP_BUF_INIT;
            size_t shown = 0;
            for (size_t i = 0; i < n; i++) {
                if (v[i].fd < 0)
                    continue;
                if (shown++ < 3)
                    tftap_buf_printf(&names, "%s%s", shown > 1 ? ", " : "", v[i].name);
            }
            if (shown > 3)
                tftap_buf_printf(&names, ", and %zu more", shown - 3);
            launch_error("gave up after %u s waiting for %zu recorder(s) to finish: %s; their part "
                         "of the record may still be missing (TFTAP_RECORDER_WAIT=SECONDS waits "
                         "longer)",
                         timeout_ms / 1000, left, tftap_buf_cstr(&names));
            tftap_buf_done(&names);
            break;
        }
        if (!said && waited >= progress_ms) {
            said = 1;
            launch_error("waiting for %zu recorder(s) to finish...", left);
        }
        /* Usually done within milliseconds: poll fast first, then calmly. */
        struct timespec ts = {0, pause_us * 1000};
        nanosleep(&ts, NULL);
        if (pause_us < 20000)
            pause_us *= 2;
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].fd >= 0)
            close(v[i].fd);
    free(v);
    return left;
}

void wrap_recorder_locks_clean(const char *run_dir)
{
    DIR *d = opendir(run_dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (is_lock_name(e->d_name))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

size_t wrap_recorder_locks_open(const char *run_dir, int **fds)
{
    struct held *v = calloc(MAX_LOCKS, sizeof *v);
    *fds = NULL;
    if (v == NULL)
        return 0;
    size_t n = open_locks(run_dir, v, MAX_LOCKS);
    int *out = n ? malloc(n * sizeof *out) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (out != NULL)
            out[i] = v[i].fd;
        else
            close(v[i].fd);
    }
    free(v);
    *fds = out;
    return out != NULL ? n : 0;
}

size_t wrap_recorder_locks_wait_exclusive(int *fds, size_t n, unsigned timeout_ms)
{
    int64_t start = tftap_mono_ms();
    size_t left;
    for (;;) {
        left = 0;
        for (size_t i = 0; i < n; i++) {
            if (fds[i] < 0)
                continue;
            if (flock(fds[i], LOCK_EX | LOCK_NB) == 0) {
                close(fds[i]);
                fds[i] = -1;
            } else {
                left++;
            }
        }
        if (left == 0 || tftap_mono_ms() - start >= timeout_ms)
            break;
        struct timespec ts = {0, 200L * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return left;
}

char *run_log_path(const char *db)
{
    size_t dirlen = 0;
    const char *dir = store_side_dir(db, &dirlen);
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_printf(&b, "%.*s/%s", dir ? (int)dirlen : 1, dir ? dir : ".", RECORDER_LOG_NAME);
    tftap_buf_cstr(&b);
    if (tftap_buf_failed(&b)) {
        tftap_buf_done(&b);
        return NULL;
    }
    return tftap_buf_take(&b, NULL);
}
