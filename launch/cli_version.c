/* launch: the version of the tofu or terraform binary a run used, remembered by
 * the binary's identity, so that `tftap run` need not start `CLI version
 * -json` for every run: a whole CLI start, 50-80 ms of CPU on a 2-core
 * machine that the user's command or tftap's end-of-run work wanted.
 *
 * The memory is a small file in the user's cache directory
 * (${XDG_CACHE_HOME:-~/.cache}/tftap/cli-versions, 0600 in a 0700
 * directory), one line per binary: its identity (device, inode, size,
 * modification and change times: a binary replaced or rebuilt in place
 * is another binary), a tab, the version it printed. Anything unexpected
 * in it (a line too long, a version with odd characters) is ignored, and
 * a binary it does not know is asked as before. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/launch_int.h"

#define CACHE_MAX_BYTES ((size_t)32 << 10) /* a larger file is not ours: ignored */
#define CACHE_MAX_LINES 64                 /* binaries remembered, newest kept */
#define KEY_MAX 160
#define VERSION_TEXT_MAX 64

/* The file the CLI runs: cli_path itself when it names a path, else the
 * first executable of that name on PATH (as execvp finds it). */
static char *resolve(const char *cli_path)
{
    if (strchr(cli_path, '/'))
        return realpath(cli_path, NULL);
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        return NULL;
    size_t nlen = strlen(cli_path);
    for (const char *p = path; *p;) {
        const char *end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        tftap_buf b = TFTAP_BUF_INIT;
        tftap_buf_append(&b, dlen ? p : ".", dlen ? dlen : 1);
        tftap_buf_putc(&b, '/');
        tftap_buf_append(&b, cli_path, nlen);
        char *found = NULL;
        if (!tftap_buf_failed(&b) && access(tftap_buf_cstr(&b), X_OK) == 0)
            found = realpath(b.data, NULL);
        tftap_buf_done(&b);
        if (found)
            return found;
        if (!end)
            break;
        p = end + 1;
    }
    return NULL;
}

static int binary_key(const char *cli_path, char key[KEY_MAX])
{
    char *file = resolve(cli_path);
    struct stat st;
    int ok = file != NULL && stat(file, &st) == 0 && S_ISREG(st.st_mode);
    free(file);
    if (!ok)
        return -1;
    int n = snprintf(key, KEY_MAX, "%ju:%ju:%jd:%jd.%09ld:%jd.%09ld", (uintmax_t)st.st_dev,
                     (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    return n > 0 && n < KEY_MAX ? 0 : -1;
}

/* The cache directory's path (made when `make`), or NULL. */
static char *cache_dir(int make)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    tftap_buf b = TFTAP_BUF_INIT;
    if (xdg && xdg[0] == '/')
        tftap_buf_puts(&b, xdg);
    else if (home && home[0] == '/')
        tftap_buf_printf(&b, "%s/.cache", home);
    else
        return NULL;
    if (make)
        (void)mkdir(tftap_buf_cstr(&b), 0700);
    tftap_buf_puts(&b, "/tftap");
    if (make)
        (void)mkdir(tftap_buf_cstr(&b), 0700);
    tftap_buf_cstr(&b);
    char *dir = tftap_buf_failed(&b) ? NULL : tftap_buf_take(&b, NULL);
    tftap_buf_done(&b);
    return dir;
}

/* The whole file, NUL-terminated, or NULL (missing, too large, unreadable). */
static char *read_cache(const char *dir)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/cli-versions", dir) >= (int)sizeof path)
        return NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *data = malloc(CACHE_MAX_BYTES + 1);
    size_t len = 0;
    while (data != NULL && len <= CACHE_MAX_BYTES) {
        ssize_t n = read(fd, data + len, CACHE_MAX_BYTES + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (data == NULL || len > CACHE_MAX_BYTES) {
        free(data);
        return NULL;
    }
    data[len] = '\0';
    return data;
}

/* A version as `version -json` prints it: short, printable, no spaces. */
static int version_ok(const char *v, size_t n)
{
    if (n == 0 || n > VERSION_TEXT_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] <= ' ' || v[i] > '~')
            return 0;
    return 1;
}

char *run_version_remembered(const char *cli_path)
{
    char key[KEY_MAX], *dir = NULL, *data = NULL, *found = NULL;
    if (binary_key(cli_path, key) != 0 || (dir = cache_dir(0)) == NULL ||
        (data = read_cache(dir)) == NULL)
        goto done;
    size_t klen = strlen(key);
    for (char *line = data; *line && !found;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len > klen && memcmp(line, key, klen) == 0 && line[klen] == '\t' &&
            version_ok(line + klen + 1, len - klen - 1))
            found = strndup(line + klen + 1, len - klen - 1);
        line = nl ? nl + 1 : line + len;
    }
done:
    free(dir);
    free(data);
    return found;
}

void run_version_remember(const char *cli_path, const char *version)
{
    char key[KEY_MAX], *dir = NULL, *data = NULL;
    if (version == NULL || !version_ok(version, strlen(version)) ||
        binary_key(cli_path, key) != 0 || (dir = cache_dir(1)) == NULL)
        goto done;
    data = read_cache(dir);
    /* Ours first, then the others (newest first) up to the bound. */
    tftap_buf out = TFTAP_BUF_INIT;
    tftap_buf_printf(&out, "%s\t%s\n", key, version);
    size_t klen = strlen(key), kept = 1;
    for (char *line = data; line && *line && kept < CACHE_MAX_LINES;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char *tab = memchr(line, '\t', len);
        int same = len > klen && memcmp(line, key, klen) == 0 && line[klen] == '\t';
        if (tab && !same && (size_t)(tab - line) < KEY_MAX &&
            version_ok(tab + 1, len - (size_t)(tab - line) - 1)) {
            tftap_buf_append(&out, line, len);
            tftap_buf_putc(&out, '\n');
            kept++;
        }
        line = nl ? nl + 1 : line + len;
    }
    /* Written whole under another name, then renamed: a reader sees the
     * old file or the new one, never half of one. */
    char tmp[4200], path[4200];
    if (!tftap_buf_failed(&out) &&
        snprintf(tmp, sizeof tmp, "%s/cli-versions.XXXXXX", dir) < (int)sizeof tmp &&
        snprintf(path, sizeof path, "%s/cli-versions", dir) < (int)sizeof path) {
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd >= 0) {
            int ok = tftap_write_all(fd, out.data, out.len) == 0;
            ok = close(fd) == 0 && ok;
            if (!ok || rename(tmp, path) != 0)
                unlink(tmp);
        }
    }
    tftap_buf_done(&out);
done:
    free(dir);
    free(data);
}
