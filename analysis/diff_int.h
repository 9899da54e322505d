/* The run diff: what diff.c (comparing, pairing) and diff_render.c (text,
 * JSON, Markdown) share; not for the rest of analysis. */
#ifndef TFTAP_ANALYSIS_DIFF_INT_H
#define TFTAP_ANALYSIS_DIFF_INT_H

#include <stddef.h>

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

struct dcall;

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

/* obj's member key when it is a string, else "" (never NULL). */
const char *analysis_diff_str_of(const sj_node *obj, const char *key);

#endif
