/* cli: filters checked against a run (filter.c). Private to cli/. */
#ifndef TFTAP_CLI_FILTER_H
#define TFTAP_CLI_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "cli/cli_store.h"

enum cli_filter_kind {
    CLI_FILTER_METHOD,          /* an rpc name or full method path, any case */
    CLI_FILTER_ADDRESS_OR_TYPE, /* a resource type, or an address and its instances */
    CLI_FILTER_TYPE,            /* a resource type */
};

/* 0 when filter (NULL: none) names something some call of the runs has
 * (runs[i] of store s[i], read from paths[i]); else one error line naming
 * the nearest name they have and 2 (1 after a store error). */
int cli_filter_check(store *const *s, const char *const *paths, const int64_t *runs, size_t nruns,
                     enum cli_filter_kind kind, const char *filter);

#endif
