/* tftap replay-provider (hidden): hands over to tftap-replay-provider, the
 * program that serves a recorded provider. gRPC core (with abseil and the
 * C++ runtime: some fifty shared libraries) lives only in that program, so
 * every other tftap process, and every shim of a live run above all,
 * starts without loading it. */
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "cli/cli.h"
#include "launch/launch.h"

#define REPLAY_PROVIDER_PROGRAM "tftap-replay-provider"

/* dir/name when it is an executable file (allocated), else NULL. */
static char *executable_in(const char *dir, size_t dlen, const char *under)
{
    tftap_buf b = TFTAP_BUF_INIT;
    tftap_buf_append(&b, dir, dlen);
    tftap_buf_puts(&b, under);
    tftap_buf_puts(&b, "/" REPLAY_PROVIDER_PROGRAM);
    char *p = NULL;
    if (!tftap_buf_failed(&b) && access(tftap_buf_cstr(&b), X_OK) == 0)
        p = tftap_buf_take(&b, NULL);
    tftap_buf_done(&b);
    return p;
}

/* pkglibexecdir as seen from bindir ("../libexec/tftap" for /usr/bin and
 * /usr/libexec/tftap), appended to b. */
static void libexec_from_bindir(tftap_buf *b)
{
    const char *bin = TFTAP_BINDIR, *lib = TFTAP_PKGLIBEXECDIR;
    /* Past the directories both share. */
    while (*bin == '/' && *lib == '/') {
        size_t n = strcspn(bin + 1, "/") + 1;
        if (n != strcspn(lib + 1, "/") + 1 || memcmp(bin, lib, n) != 0)
            break;
        bin += n;
        lib += n;
    }
    /* Up from what is left of bindir, down into what is left of the other. */
    for (const char *p = bin; *p == '/'; p += strcspn(p + 1, "/") + 1)
        tftap_buf_puts(b, "/..");
    tftap_buf_puts(b, lib);
}

/* Beside this tftap first (a build tree); then where `make install` put
 * it relative to this tftap, so that a tftap installed into a DESTDIR, a
 * package's staging tree or another prefix given to `make install` finds
 * its own; then where it was configured to go. NULL when none is there. */
static char *find_program(void)
{
    char *self = launch_self_exe(), *p = NULL;
    char *slash = self != NULL ? strrchr(self, '/') : NULL;
    if (slash != NULL) {
        size_t dlen = (size_t)(slash - self);
        p = executable_in(self, dlen, "");
        if (p == NULL) {
            tftap_buf rel = TFTAP_BUF_INIT;
            libexec_from_bindir(&rel);
            if (!tftap_buf_failed(&rel))
                p = executable_in(self, dlen, tftap_buf_cstr(&rel));
            tftap_buf_done(&rel);
        }
    }
    free(self);
    if (p == NULL)
        p = executable_in("", 0, TFTAP_PKGLIBEXECDIR);
    return p;
}

int cli_replay_provider(int argc, char **argv)
{
    (void)argc;
    char *prog = find_program();
    if (prog == NULL) {
        cli_error("replay-provider: %s is not installed (looked beside tftap and in %s)",
                  REPLAY_PROVIDER_PROGRAM, TFTAP_PKGLIBEXECDIR);
        return 1;
    }
    /* argv goes over as is: its argv[0], the command word, names the
     * command in the program's usage errors. */
    execv(prog, argv);
    cli_error("replay-provider: cannot run %s: %s", prog, strerror(errno));
    free(prog);
    return 1;
}
