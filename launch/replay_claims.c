/* launch: a claims directory read and removed once its replay is over
 * (replay.h: the replaying processes of one command share it), for `tftap
 * replay` and for the test tftap run runs again. */
#include "config.h"

#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "launch/launch_int.h"
#include "replay/replay.h"

int launch_claims_finish(const char *claims)
{
    DIR *d = opendir(claims);
    int out = 0;
    if (d == NULL)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        out |= strcmp(de->d_name, REPLAY_CLAIMS_OUT_OF_STEP) == 0;
        unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
    rmdir(claims);
    return out;
}
