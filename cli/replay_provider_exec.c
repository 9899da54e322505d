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

#include "cli/cli.h"
#include "cli/wrap.h"

#define REPLAY_PROVIDER_PROGRAM "tftap-replay-provider"

/* Beside this tftap first (a build tree), then where `make install` puts
 * it. NULL when neither is there. */
static char *find_program(void)
{
    char *self = wrap_self_exe();
    if (self != NULL) {
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            slash[1] = '\0';
            size_t n = strlen(self) + sizeof REPLAY_PROVIDER_PROGRAM;
            char *p = malloc(n);
            if (p != NULL) {
                snprintf(p, n, "%s%s", self, REPLAY_PROVIDER_PROGRAM);
                if (access(p, X_OK) == 0) {
                    free(self);
                    return p;
                }
                free(p);
            }
        }
        free(self);
    }
    static const char installed[] = TFTAP_PKGLIBEXECDIR "/" REPLAY_PROVIDER_PROGRAM;
    return access(installed, X_OK) == 0 ? strdup(installed) : NULL;
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
