/* libFuzzer target: the store's reading of recorded JSON (its own JSON
 * reader and the plan-style renderer). An input is up to five JSON texts
 * separated by NUL bytes: prior, planned, requires_replace, diagnostics and
 * the block schema rendering follows (read from the database, so any JSON).
 * Malformed JSON must be refused cleanly; anything accepted must render. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *part[5] = {NULL, NULL, NULL, NULL, NULL};
    size_t np = 0;
    const char *p = copy, *end = copy + size;
    while (np < 5 && p <= end) {
        part[np++] = p;
        p += strlen(p) + 1;
    }
    store_change_row c;
    memset(&c, 0, sizeof c);
    c.call_id = 1;
    c.rpc = (size & 1) ? "PlanResourceChange" : "ApplyResourceChange";
    c.type_name = "test_thing";
    c.address = (size & 2) ? "module.m.test_thing.a[\"k\"]" : NULL;
    c.address_note = "fuzz";
    c.prior = part[0];
    c.planned = part[1];
    c.new_state = part[1];
    c.requires_replace = part[2];
    c.diagnostics = part[3];
    c.block_schema = part[4];
    /* A failed call renders what it attempted; an apply replacing an
     * object renders from the destroyed one. */
    c.failed = (size & 8) != 0;
    c.proposed = part[1];
    if (size & 16) {
        c.destroyed_prior = part[0];
        c.prior = "null";
    }
    enum analysis_action a;
    int rc_action = analysis_change_action(&c, &a);
    tftap_buf out = TFTAP_BUF_INIT;
    int rc = analysis_render_change(&c, (size & 4) ? ANALYSIS_RENDER_COLOR : 0, &out);
    /* Rendering reads what the action reads (and the diagnostics too). */
    if (rc_action == TFTAP_EDECODE && rc != TFTAP_EDECODE)
        abort();
    if (rc == 0 && out.len == 0)
        abort();
    tftap_buf_done(&out);
    free(copy);
    return 0;
}
