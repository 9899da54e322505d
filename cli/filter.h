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

/* The name nearest to filter among those offered (case-insensitive edit
 * distance; ties to the first in byte order), for the message of a filter
 * that matched none. Initialise as {filter, NULL, 0}; best is NULL until a
 * name was offered. cli_nearest_offer: 0 or TFTAP_ENOMEM. */
typedef struct cli_nearest {
    const char *filter;
    char *best;
    size_t dist;
} cli_nearest;
int cli_nearest_offer(cli_nearest *n, const char *name);
void cli_nearest_done(cli_nearest *n);

#endif
