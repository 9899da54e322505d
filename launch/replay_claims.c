/* launch: a claims directory read and removed once its replay is over
 * (replay.h: the replaying processes of one command share it), for `tftap
 * replay` and for the test tftap run runs again. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "replay/replay.h"

int launch_claims_out_of_step(const char *claims)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", claims, REPLAY_CLAIMS_OUT_OF_STEP);
    return n > 0 && (size_t)n < sizeof path && access(path, F_OK) == 0;
}

int launch_claims_empty(const char *claims)
{
    DIR *d = opendir(claims);
    if (d == NULL)
        return 1; /* missing: made when the replay starts */
    struct dirent *de;
    int empty = 1;
    while (empty && (de = readdir(d)) != NULL)
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    return empty;
}

int launch_claims_finish(const char *claims)
{
    /* Looked at before anything is removed: a directory read while its
     * entries go may pass over some. */
    int out = launch_claims_out_of_step(claims);
    DIR *d = opendir(claims);
    if (d == NULL)
        return out;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    rmdir(claims);
    return out;
}
