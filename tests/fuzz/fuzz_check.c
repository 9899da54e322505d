/* libFuzzer target: the contract checks over recorded JSON (read from the
 * database, so any JSON). An input is up to six JSON texts separated by NUL
 * bytes: block schema, prior, config, planned, new state and
 * requires_replace. Malformed JSON must be refused cleanly; anything
 * accepted must be judged, every finding complete. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void judge(const analysis_findings *f)
{
    for (size_t i = 0; i < f->n; i++)
        if (!f->v[i].rule || !f->v[i].path || !f->v[i].message || !*f->v[i].message)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const rpcs[] = {"PlanResourceChange", "ApplyResourceChange", "ReadResource",
                                       "ReadDataSource"};
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *part[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    size_t np = 0;
    const char *p = copy, *end = copy + size;
    while (np < 6 && p <= end) {
        part[np++] = p;
        p += strlen(p) + 1;
    }
    analysis_call c = {.call_id = 1,
                       .rpc = rpcs[size & 3],
                       .type_name = "test_thing",
                       .address = (size & 4) ? "test_thing.a" : NULL,
                       .block_schema = part[0],
                       .prior = part[1],
                       .config = part[2],
                       .planned = part[3],
                       .new_state = part[4],
                       .requires_replace = part[5],
                       .legacy = (size & 8) != 0,
                       .has_error = (size & 16) != 0};
    analysis_findings f = ANALYSIS_FINDINGS_INIT;
    int rc = analysis_check_call(&c, &f);
    if (rc != 0 && rc != TFTAP_EDECODE && rc != TFTAP_ENOMEM)
        abort();
    if (rc == TFTAP_EDECODE && f.n != 0)
        abort();
    judge(&f);
    /* The same values as a plan during apply against a first plan. */
    analysis_call first = {.call_id = 2, .planned = part[1]};
    c.rpc = "PlanResourceChange";
    rc = analysis_check_final_plan(&first, &c, &f);
    if (rc != 0 && rc != TFTAP_EDECODE && rc != TFTAP_ENOMEM)
        abort();
    judge(&f);
    analysis_findings_done(&f);
    free(copy);
    return 0;
}
