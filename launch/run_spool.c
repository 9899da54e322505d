/* launch: tftap run into a PostgreSQL record: the run is recorded into a spool, a
 * private SQLite file beside the recorders' log (${TMPDIR}/tftap-UID), and
 * copied into the record once its end has redacted what core marks
 * sensitive. Core's marks are known only then, and a value sent to the
 * server before would stay in its write-ahead log and old row versions:
 * nothing in clear reaches it (docs/database.md, "Runs recorded into it").
 * A spool whose run could not be copied (the server away, a run whose
 * tftap run was killed) stays, and the next `tftap run` into the same
 * record copies it, redacting first what its end never did. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "store/store.h"

#define SPOOL_PREFIX "tftap-spool-"

/* Where what the copy has to say goes: stderr (tftap run), or, from a
 * wrapped command's recorder (whose stderr is nowhere), the recorders'
 * log beside the spool. */
static const char *log_for; /* the spool whose log, or NULL: stderr */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    size_t len = (size_t)k < sizeof text ? (size_t)k : sizeof text - 1;
    if (!log_for) {
        launch_error("%s", text);
        return;
    }
    char *path = run_log_path(log_for);
    int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
    free(path);
    if (fd >= 0) {
        tftap_log_line(fd, "tftap wrap", text, len);
        close(fd);
    }
}

/* "tftap-spool-" and 12 hex digits of SHA-256 of the record's URI without
 * its password: the spools of one record. */
static int spool_stem(const char *uri, char out[sizeof SPOOL_PREFIX + 12])
{
    char *bare = store_without_password(uri);
    if (!bare)
        return TFTAP_ENOMEM;
    char hex[65];
    tftap_sha256_hex(bare, strlen(bare), hex);
    free(bare);
    snprintf(out, sizeof SPOOL_PREFIX + 12, SPOOL_PREFIX "%.12s", hex);
    return 0;
}

int run_spool_is(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, SPOOL_PREFIX, strlen(SPOOL_PREFIX)) == 0;
}

int run_spool_make(store *record, const char *uri, const char *command_key, char **path)
{
    *path = NULL;
    size_t dirlen = 0;
    const char *dir = store_side_dir(uri, &dirlen);
    char stem[sizeof SPOOL_PREFIX + 12];
    if (!dir)
        return TFTAP_EIO;
    int rc = spool_stem(uri, stem);
    if (rc)
        return rc;
    tftap_buf p = TFTAP_BUF_INIT;
    char keyhex[65];
    if (command_key)
        tftap_sha256_hex(command_key, strlen(command_key), keyhex);
    /* A wrapped command's: its pid (the key's second part) in the name,
     * so that no one copies its run while the command lasts. */
    const char *pid = command_key ? strchr(command_key, '/') : NULL;
    if (command_key)
        tftap_buf_printf(&p, "%.*s/%s-w%ld-%.16s.db", (int)dirlen, dir, stem,
                         pid ? strtol(pid + 1, NULL, 10) : 0L, keyhex);
    else
        tftap_buf_printf(&p, "%.*s/%s-XXXXXX.db", (int)dirlen, dir, stem);
    tftap_buf_cstr(&p);
    char *name = tftap_buf_failed(&p) ? NULL : tftap_buf_take(&p, NULL);
    tftap_buf_done(&p);
    if (!name)
        return TFTAP_ENOMEM;
    /* 0600; a name nobody else has, or the one every shim of the command
     * opens. */
    int fd = command_key ? open(name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)
                         : mkstemps(name, 3);
    if (fd < 0) {
        free(name);
        return TFTAP_EIO;
    }
    close(fd);
    store *s = NULL;
    rc = store_open(name, STORE_OPEN_CREATE, &s);
    if (rc == 0)
        rc = store_key_adopt(s, record);
    store_close(s);
    if (rc) {
        if (!command_key) /* the others' of the command stays */
            (void)store_file_remove(name);
        free(name);
        return rc;
    }
    *path = name;
    return 0;
}

/* The ids of a spool's runs. */
struct spool_runs {
    int64_t *ids;
    size_t n, cap;
    int failed;
};

static int take_run(void *ctx, const store_run_row *row)
{
    struct spool_runs *r = ctx;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        int64_t *ids = realloc(r->ids, cap * sizeof *ids);
        if (!ids) {
            r->failed = 1;
            return 1;
        }
        r->ids = ids;
        r->cap = cap;
    }
    r->ids[r->n++] = row->id;
    return 0;
}

/* A run held back whose end never redacted it (its tftap run was killed):
 * redacted by what its record tells (its directory's configuration, its
 * arguments; not the environment it had, nor its plan). */
static void redact_orphan(store *s, int64_t run_id)
{
    struct run_words w = {NULL, NULL, 0};
    /* Held back until the redaction succeeded (a recorder's run of its
     * own was never marked). */
    if (store_run_hold_back(s, run_id, 1) == 0 && run_words_read(s, run_id, &w) == 0)
        (void)run_redact_secrets(s, run_id, w.cwd, w.args ? w.args : (char *[]){NULL}, NULL, NULL,
                                 0, 1);
    run_words_done(&w);
}

struct files_to {
    store *record;
    int64_t run_id;
    int failed;
};

static int copy_file(void *ctx, const store_run_file *f)
{
    struct files_to *t = ctx;
    t->failed |= store_run_files_add(t->record, t->run_id, f, 1) != 0;
    return 0;
}

/* Copy the spool's runs into record, in id order (a suite's run before
 * its steps); orphans: runs still held back are redacted first (no
 * process records them any more), else they stay. The spool is removed
 * once every run is in the record. How many runs stay, or -1 when the
 * spool cannot be read; *why the first failure. */
static int publish_one(store *record, const char *uri, const char *spool, int orphans, int quiet,
                       tftap_buf *why)
{
    store *s = NULL;
    struct spool_runs r = {NULL, 0, 0, 0};
    int left = 0;
    /* Gone: copied and removed by another (two of a wrapped command's
     * recorders may leave at once, each the last by what it read). */
    struct stat st;
    if (stat(spool, &st) != 0 && errno == ENOENT)
        return 0;
    if (store_open(spool, 0, &s) != 0 || store_runs_each(s, take_run, &r) != 0 || r.failed) {
        store_close(s);
        free(r.ids);
        return -1;
    }
    if (orphans && r.n == 0) {
        /* Made a moment ago, its run not begun yet: not an orphan. */
        store_close(s);
        free(r.ids);
        return 1;
    }
    for (size_t i = 0; i < r.n; i++) {
        int kept = 0;
        if (store_run_values_kept(s, r.ids[i], &kept) != 0) {
            left++;
            continue;
        }
        if (kept != 1 && orphans) {
            redact_orphan(s, r.ids[i]);
            (void)store_run_values_kept(s, r.ids[i], &kept);
        }
        if (kept == 2) {
            /* Its end did not redact it: never in clear to the server. */
            if (why->len == 0)
                tftap_buf_printf(why, "run %lld was not redacted", (long long)r.ids[i]);
            left++;
            continue;
        }
        store_push_info info;
        int rc = store_push_run(s, r.ids[i], record, NULL, NULL, &info);
        if (rc != 0) {
            if (why->len == 0)
                tftap_buf_printf(why, "%s%s", rc == TFTAP_EIO ? "" : "the record refused it: ",
                                 info.why[0] ? info.why : tftap_strerror(rc));
            left++;
        } else if (!info.already) {
            /* A step run's directory, for `tftap replay STEP` from the
             * record (push leaves it out: it is the spool's own). */
            struct files_to t = {record, info.dst_run_id, 0};
            if (store_run_files_each(s, r.ids[i], copy_file, &t) != 0 || t.failed)
                say("run %lld is in %s without its working directory's files: %s",
                    (long long)info.dst_run_id, STORE_SHOWN(uri), store_errmsg(record));
        }
        if (rc == 0 && orphans && !quiet) {
            say("note: run %lld held back in %s (its tftap run did not copy it) is now "
                "run %lld of %s",
                (long long)r.ids[i], spool, (long long)info.dst_run_id, STORE_SHOWN(uri));
        }
    }
    store_close(s);
    free(r.ids);
    if (left == 0 && store_file_remove(spool) != 0)
        say("could not remove %s: %s", spool, strerror(errno));
    return left;
}

/* A wrapped command's spool ("-wPID-..."), its command still running (or
 * its pid taken by another process since: left for later, never copied
 * too early). Between two of its provider processes nobody holds it. */
static int command_alive(const char *rest)
{
    /* The whole shape, "-w" digits "-" 16 hex ".db": a plain spool's random
     * part (mkstemps) may begin with "-w" too. */
    if (strncmp(rest, "-w", 2) != 0 || !isdigit((unsigned char)rest[2]))
        return 0;
    char *end = NULL;
    long pid = strtol(rest + 2, &end, 10);
    if (*end != '-' || strspn(end + 1, "0123456789abcdef") != 16 || strcmp(end + 17, ".db") != 0)
        return 0;
    return pid > 1 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* The spools of uri's record no process holds, but ours: their runs
 * copied as publish_one does. */
static void publish_orphans(store *record, const char *uri, const char *ours)
{
    size_t dirlen = 0;
    const char *dir = store_side_dir(uri, &dirlen);
    char stem[sizeof SPOOL_PREFIX + 12];
    if (!dir || spool_stem(uri, stem) != 0)
        return;
    char *d = strndup(dir, dirlen);
    DIR *dh = d ? opendir(d) : NULL;
    struct dirent *de;
    while (dh && (de = readdir(dh)) != NULL) {
        size_t n = strlen(de->d_name);
        if (strncmp(de->d_name, stem, strlen(stem)) != 0 || n < 3 ||
            strcmp(de->d_name + n - 3, ".db") != 0)
            continue;
        tftap_buf p = TFTAP_BUF_INIT;
        tftap_buf_printf(&p, "%s/%s", d, de->d_name);
        const char *path = tftap_buf_cstr(&p);
        tftap_buf why = TFTAP_BUF_INIT;
        if (!tftap_buf_failed(&p) && (ours == NULL || strcmp(path, ours) != 0) &&
            !command_alive(de->d_name + strlen(stem)) && store_file_in_use(path) == 0)
            (void)publish_one(record, uri, path, 1, 0, &why);
        tftap_buf_done(&why);
        tftap_buf_done(&p);
    }
    if (dh)
        closedir(dh);
    free(d);
}

/* Tried every second for wait_ms, in a process of its own (the user's
 * command is over); what stays is said in the recorders' log. */
static void publish_later(const char *uri, const char *spool, int64_t run_id, unsigned wait_ms)
{
    if (run_detach() == 0) {
        int64_t deadline = tftap_mono_ms() + wait_ms;
        tftap_buf why = TFTAP_BUF_INIT;
        for (;;) {
            store *record = NULL;
            int left = -1;
            tftap_buf_reset(&why);
            if (store_open(uri, 0, &record) == 0)
                left = publish_one(record, uri, spool, 0, 1, &why);
            else
                tftap_buf_printf(&why, "cannot open it: %s",
                                 *store_open_error() ? store_open_error() : "unavailable");
            store_close(record);
            if (left == 0)
                _exit(0);
            if (tftap_mono_ms() >= deadline)
                break;
            struct timespec ts = {1, 0};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
        char *path = run_log_path(spool);
        int fd =
            path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
        free(path);
        if (fd >= 0) {
            char text[2048];
            int k = snprintf(text, sizeof text,
                             "gave up copying run %lld into %s: %s (tried every second for %u "
                             "s): it is held in %s; the next tftap run into the record copies "
                             "it, or tftap push all --db %s --to URI",
                             (long long)run_id, STORE_SHOWN(uri), tftap_buf_cstr(&why),
                             wait_ms / 1000, spool, spool);
            if (k > 0)
                tftap_log_line(fd, "tftap run", text,
                               (size_t)k < sizeof text ? (size_t)k : sizeof text - 1);
            close(fd);
        }
        _exit(1);
    }
}

void run_spool_publish(const char *uri, const char *spool, int64_t run_id, unsigned wait_ms,
                       int to_log)
{
    log_for = to_log ? spool : NULL;
    store *record = NULL;
    tftap_buf why = TFTAP_BUF_INIT;
    int left = 1; /* the record away: all of it */
    if (store_open(uri, 0, &record) == 0) {
        left = publish_one(record, uri, spool, 0, 0, &why);
        if (left == 0)
            publish_orphans(record, uri, spool);
    } else {
        tftap_buf_printf(&why, "cannot open it: %s",
                         *store_open_error() ? store_open_error() : "unavailable");
    }
    store_close(record);
    if (left == 0) {
        tftap_buf_done(&why);
        return;
    }
    if (left < 0 || strstr(tftap_buf_cstr(&why), "not redacted") != NULL) {
        /* Not for want of a server: trying again would change nothing. */
        say("run %lld is held back in %s and not copied into %s (%s): its values may hold "
            "what core marks sensitive in clear; the next tftap run into the record "
            "redacts it by what its record tells and copies it",
            (long long)run_id, spool, STORE_SHOWN(uri),
            left < 0 ? "the file cannot be read" : tftap_buf_cstr(&why));
    } else if (strncmp(tftap_buf_cstr(&why), "the record refused", 18) == 0) {
        say("cannot copy run %lld into %s (%s): it is held in %s; the next tftap run into "
            "the record copies it, or tftap push all --db %s --to URI",
            (long long)run_id, STORE_SHOWN(uri), tftap_buf_cstr(&why), spool, spool);
    } else {
        say("cannot copy run %lld into %s now (%s): it is held in %s and copied when the "
            "server is back (tftap keeps trying for %u %s in the background)",
            (long long)run_id, STORE_SHOWN(uri), tftap_buf_cstr(&why), spool,
            wait_ms >= 60000 ? wait_ms / 60000 : wait_ms / 1000, wait_ms >= 60000 ? "min" : "s");
        publish_later(uri, spool, run_id, wait_ms);
    }
    tftap_buf_done(&why);
}
