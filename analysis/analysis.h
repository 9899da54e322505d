/* analysis: pure functions over recorded calls' decoded values and schemas.
 * Layer: may use common, decoder and store.
 *
 * Ownership: results filled into caller storage are released with their
 * _done function; inputs are borrowed for the duration of the call. */
#ifndef TFTAP_ANALYSIS_H
#define TFTAP_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "store/store.h"

/* ---- contract checks (docs/check.md) ------------------------------------ */

enum analysis_verdict {
    ANALYSIS_REJECTS,   /* core stops with an error */
    ANALYSIS_TOLERATES, /* core only logs a warning (legacy type system) */
    ANALYSIS_DRIFT,     /* informational: a refresh found the object changed */
};

/* One broken rule. Every string is owned by the findings list; expected and
 * actual are decoded-value JSON (redacted values stay redacted) or NULL. */
typedef struct analysis_finding {
    int64_t call_id;
    int64_t other_call_id; /* the call compared with (the first plan), else 0 */
    char *rpc;
    char *type_name;
    char *address; /* NULL when the call was not matched to one */
    const char *rule;
    char *path; /* ".tags[\"x\"][2]"; "" for the whole object */
    char *expected;
    char *actual;
    enum analysis_verdict verdict;
    char *message; /* one line, for the provider's developer */
} analysis_finding;

typedef struct analysis_findings {
    analysis_finding *v;
    size_t n, cap;
    size_t unchecked; /* calls whose values could not be checked (no schema, bad JSON) */
} analysis_findings;
#define ANALYSIS_FINDINGS_INIT                                                                     \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }
void analysis_findings_done(analysis_findings *f);
/* Findings that are violations (not drift). */
size_t analysis_findings_violations(const analysis_findings *f);
/* "rejects", "tolerates", "drift". */
const char *analysis_verdict_name(enum analysis_verdict v);

/* One recorded call's values as the store keeps them (JSON texts, NULL when
 * absent; see store_change_row). */
typedef struct analysis_call {
    int64_t call_id;
    const char *rpc; /* PlanResourceChange, ApplyResourceChange, ReadResource, ReadDataSource */
    const char *type_name;
    const char *address;
    const char *block_schema; /* the type's schema block; NULL: values not checkable */
    const char *prior, *config, *planned, *new_state, *requires_replace;
    int legacy;    /* the response set legacy_type_system */
    int has_error; /* the response carried an error diagnostic */
} analysis_call;

/* Check one call's answer against the rules core applies to it; findings
 * are appended to out. Returns 0, TFTAP_EDECODE (a JSON text or the schema
 * is malformed: nothing appended, out->unchecked counted) or TFTAP_ENOMEM. */
int analysis_check_call(const analysis_call *c, analysis_findings *out);

/* "Inconsistent final plan": the plan made during apply (final, its
 * planned state) against the first plan of the same address (first).
 * Findings are reported on final's call. Returns as analysis_check_call. */
int analysis_check_final_plan(const analysis_call *first, const analysis_call *final,
                              analysis_findings *out);

/* Every check over a run's recorded calls, optionally only those whose
 * address or type equals filter (as store_changes_each); the final plan of
 * an apply is compared with the first plan of the same address in the same
 * run or, for a saved plan, in the latest earlier run that planned it.
 * Returns 0, TFTAP_ESTORE or TFTAP_ENOMEM. */
int analysis_check_run(store *s, int64_t run_id, const char *filter, analysis_findings *out);

#endif
