/* The run diff: what diff.c (comparing), diff_pair.c (pairing) and
 * diff_render.c (text, JSON, Markdown) share; not for the rest of
 * analysis. */
#ifndef TFTAP_ANALYSIS_DIFF_INT_H
#define TFTAP_ANALYSIS_DIFF_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"

/* Where an attribute's value came from (named in this order by diff_render.c's src_names). */
enum src {
    SRC_CONFIG,   /* equal to the configuration (ref1 of a plan or read) */
    SRC_PLANNED,  /* equal to the planned value (ref1 of an apply) */
    SRC_PRIOR,    /* kept from the prior (or current, or raw) state */
    SRC_UNKNOWN,  /* left unknown, with its refinements */
    SRC_PROVIDER, /* chosen by the provider */
};

/* What a finding is about (named in this order by diff_render.c's kind_names). */
enum kind {
    K_ONLY_A,    /* a call only run A made */
    K_ONLY_B,    /* a call only run B made */
    K_STATUS,    /* gRPC status */
    K_ACTION,    /* planned/applied action */
    K_VALUE,     /* an attribute's source or chosen value */
    K_INPUT,     /* an attribute's config/prior input (not behaviour) */
    K_REPLACE,   /* a requires_replace path added (b) or removed (a) */
    K_DIAG,      /* a diagnostic added (b), removed (a) or changed (both) */
    K_PRIVATE,   /* private data hash */
    K_DEFERRED,  /* deferral */
    K_SCHEMAVER, /* the type's schema version */
    K_SCHEMA,    /* the provider's schema */
};

/* One difference; its texts are owned by the diff. */
struct finding {
    enum kind kind;
    size_t pair; /* index into d->pairs */
    char *path;  /* attribute path, or NULL */
    char *what;  /* which value: "planned", "new", "state", "upgraded", "result" */
    int has_a, has_b;
    enum src src_a, src_b;
    char *a, *b; /* JSON texts (NULL: absent on that side) */
};

/* Two calls paired up (one of them NULL when only one run made it), with
 * their findings d->f[first .. first + nfind). */
struct pair {
    const analysis_diff_call *a, *b;
    size_t ia, ib; /* index in its run (for ordering) */
    const char *group;
    size_t first, nfind;
};

/* A call being diffed. Its JSON is parsed while it is compared and freed
 * right after (trees of every call at once would be most of the memory);
 * what pairing needs is kept: the key, the action, a null prior state. */
struct dcall {
    const analysis_diff_call *c;
    size_t idx;
    sj_doc *req, *resp;
    char *key;
    char *rkey;         /* the key without create half and address: provider, method, type */
    const char *action; /* static string, or NULL */
    int prior_null;
    int create_half;
    uint64_t req_digest; /* an unnamed call's (request_digest), else 0 */
};

struct analysis_diff {
    struct dcall *ca, *cb;
    size_t na, nb;
    struct pair *pairs;
    size_t npairs;
    struct finding *f;
    size_t nf, capf;
    size_t behaviour, inputs;
    const analysis_diff_opts *opts;
    struct analysis_diff_meta meta;
    int err;
};

/* Is c a call of that method ("PlanResourceChange")? */
static inline int diff_rpc_is(const analysis_diff_call *c, const char *rpc)
{
    return c->rpc && strcmp(c->rpc, rpc) == 0;
}

/* Pair run A's loaded calls (d->ca) with run B's (d->cb), as diff_pair.c's
 * top comment says: marks create halves and sets each call's keys, fills
 * d->pairs and d->npairs (calls, order and group; no findings yet), and
 * sets *pa and *pb to arrays parallel to d->pairs with each pair's calls
 * (NULL on the side of a run that did not make it), which the caller
 * frees. Returns 0 or TFTAP_ENOMEM; on error *pa and *pb are NULL and
 * what d holds is freed with it (analysis_diff_free). */
int diff_pair_calls(analysis_diff *d, struct dcall ***pa, struct dcall ***pb);

/* obj's member key when it is a string, else "" (never NULL). */
const char *analysis_diff_str_of(const sj_node *obj, const char *key);

#endif
