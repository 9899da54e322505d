/* common: shared libraries loaded when first needed (tftap_lib_load). */
#include "common/common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* One lock for every library: each is loaded once, so it is never contended
 * for long, and dlerror's answer is read before another load can replace it. */
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

static void set_why(tftap_lib *lib, const char *msg, const char *detail)
{
    snprintf(lib->why, sizeof lib->why, "%s%s", msg ? msg : "", detail ? detail : "");
    lib->why[strcspn(lib->why, "\n")] = '\0';
}

static int load(tftap_lib *lib)
{
    void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        set_why(lib, e ? e : lib->soname, e ? NULL : ": cannot be loaded");
        return TFTAP_ENOLIB;
    }
    for (size_t i = 0; i < lib->nsyms; i++) {
        void *p = dlsym(h, lib->syms[i].name);
        if (p == NULL) {
            /* An older library than the headers we were built with. */
            char msg[200];
            snprintf(msg, sizeof msg, "%s: no symbol ", lib->soname);
            set_why(lib, msg, lib->syms[i].name);
            for (size_t j = 0; j < i; j++)
                *lib->syms[j].fn = NULL;
            dlclose(h);
            return TFTAP_ENOLIB;
        }
        *lib->syms[i].fn = p;
    }
    /* Never dlclose()d: the library's functions and global state are used
     * until the process exits. */
    return 0;
}

int tftap_lib_load(tftap_lib *lib)
{
    pthread_mutex_lock(&lib_mu);
    if (lib->state == 0)
        lib->state = load(lib) == 0 ? 1 : -1;
    int rc = lib->state == 1 ? 0 : TFTAP_ENOLIB;
    pthread_mutex_unlock(&lib_mu);
    return rc;
}
