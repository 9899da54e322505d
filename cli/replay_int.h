/* cli: what `tftap replay` (replay.c) shares with the replay of a recorded
 * acceptance test step (replay_step.c). */
#ifndef TFTAP_CLI_REPLAY_INT_H
#define TFTAP_CLI_REPLAY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "launch/launch.h"

/* The recorded providers of one run. */
struct recorded {
    struct launch_provider *v;
    size_t n, cap;
    int err;
};

/* Where the recording is and how its providers answer. */
struct source {
    const char *exe;
    const char *path; /* absolute */
    int64_t run;
    const char *const *ignore;
    size_t nignore;
};

/* Run cmd (ncmd words) with every provider of r answered from src, as
 * `tftap run` with ro runs it (recorded into ro->db); the command's exit
 * code, or 1 after one error line. */
int replay_command(struct recorded *r, char **cmd, int ncmd, const struct source *src,
                   struct launch_run_opts *ro);

/* A step run of src laid out again in dir_opt (NULL: a temporary
 * directory, removed afterwards) and its command run there with cli_opt
 * (NULL: the recorded CLI, docs/acceptance-tests.md) against r, each
 * provider reattached; the command's exit code, or 1 after one error line
 * (the run kept no working directory, its files cannot be written). */
int replay_step(struct recorded *r, const struct source *src, const char *dir_opt,
                const char *cli_opt, struct launch_run_opts *ro);

#endif
