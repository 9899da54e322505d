/* launch: where a command records or reads when no --db says (launch.h),
 * in a file of its own: tftap-replay-provider links it without the rest. */
#include "config.h"

#include <stdlib.h>

#include "launch/launch.h"
#include "store/store.h"

const char *launch_db_path(const char *given)
{
    if (given && *given)
        return given;
    const char *env = getenv("TFTAP_DB");
    if (env && *env)
        return env;
    return STORE_DEFAULT_PATH;
}
