/* Contract checks: what check.c (the entry points), check_findings.c
 * (findings and paths), check_value.c (values, types, schema blocks,
 * equality) and check_rules.c (the rules) share; not for the rest of analysis. All values are
 * decoded JSON as the store wrote it (sj_node, borrowed: nothing here owns one). */
#ifndef TFTAP_ANALYSIS_CHECK_INT_H
#define TFTAP_ANALYSIS_CHECK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

/* Set elements are correlated pairwise (as core does); beyond this many
 * pairs only elements with identical JSON correlate, so a huge set costs
 * linear time. */
#define CHECK_MAX_SET_PAIRS (1u << 20)

/* ---- findings and paths (check_findings.c) ------------------------------- */

/* One check in progress: the call, the rule being checked, the path. */
struct ck {
    const analysis_call *c;
    int64_t other_call_id;
    analysis_findings *out;
    const char *rule;
    enum analysis_verdict verdict;
    tftap_buf path;
    int err; /* TFTAP_ENOMEM once anything failed */
};

/* Add a finding of k's rule at k's path; expected and actual (may be NULL)
 * are copied as JSON. Out of memory sets k->err and adds nothing. */
void ck_add(struct ck *k, const sj_node *expected, const sj_node *actual, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Drop findings added since mark (a sensitive attribute's details). */
void ck_drop_since(struct ck *k, size_t mark);
/* Append a step to k's path; each returns the mark ck_pop goes back to. */
size_t ck_push_attr(struct ck *k, const char *name, size_t n);
size_t ck_push_key(struct ck *k, const char *key, size_t n);
size_t ck_push_index(struct ck *k, size_t i);
void ck_pop(struct ck *k, size_t mark);
/* A map element or object attribute (m, a member) present on one side
 * only, reported at the collection's path with its key quoted. */
void ck_key_finding(struct ck *k, const sj_node *expected, const sj_node *actual, const sj_node *m,
                    const char *what);

/* ---- values, types, schema blocks, equality (check_value.c) -------------- */

/* What a decoded value is (NULL reads as null). */
int ck_v_null(const sj_node *v);
int ck_v_unknown(const sj_node *v);
int ck_v_sensitive(const sj_node *v);
/* A value as a whole that decoding could not produce. */
int ck_v_undecoded(const sj_node *v);
/* Element i of an array (NULL past its end or for anything else), and how
 * many elements or members an array or object has (0 for anything else). */
size_t ck_count(const sj_node *v);
/* A `dynamic` value travels as {"type": T, "value": V}: 1 and both set
 * when v is one, else 0 with *ty NULL and *val v. */
int ck_dyn_unwrap(const sj_node *v, const sj_node **ty, const sj_node **val);
/* The value inside a block of this nesting that travels as a dynamic value. */
const sj_node *ck_block_unwrap(char nesting, const sj_node *v);

/* A type: cty type JSON, or protocol-6 nested attributes. */
enum tk {
    TK_ANY,
    TK_STRING,
    TK_NUMBER,
    TK_BOOL,
    TK_DYN,
    TK_LIST,
    TK_SET,
    TK_MAP,
    TK_TUPLE,
    TK_OBJECT
};

struct ty {
    const sj_node *type;  /* cty type JSON, or NULL */
    const sj_node *attrs; /* nested attribute schemas (array), or NULL */
    char nesting;         /* with attrs: 'S' single/group, 'L' list, 'T' set, 'M' map */
};

/* A schema nesting name ("LIST", ...) as struct ty's nesting (0: unknown). */
char ck_nesting_char(const sj_node *n);
/* An attribute schema's type. */
struct ty ck_ty_of_attr(const sj_node *a);
enum tk ck_ty_kind(struct ty t);
/* A collection's element type, an object's attribute type, a tuple's
 * element type (all members NULL when there is none). */
struct ty ck_ty_elem(struct ty t);
struct ty ck_ty_member(struct ty t, const char *name, size_t n);
struct ty ck_ty_tuple(struct ty t, size_t i);

/* Generic equality: arrays in order, objects in any member order. */
int ck_geq(const sj_node *a, const sj_node *b);
/* cty RawEquals of two values of type t; unrefined ignores unknowns'
 * refinements. */
int ck_veq(struct ty t, const sj_node *a, const sj_node *b, int unrefined);

/* A schema block: its attributes and nested block types. */
struct block {
    const sj_node *attrs;  /* array of attribute schemas, or NULL */
    const sj_node *blocks; /* array of nested block types, or NULL */
};

struct block ck_block_of(const sj_node *b);
/* A boolean member of an attribute schema ("optional", "computed", ...). */
int ck_flag(const sj_node *a, const char *name);
/* The member of an object value that name (a JSON string) names; NULL
 * when obj is null or unknown. */
const sj_node *ck_get_attr(const sj_node *obj, const sj_node *name);

/* ---- the rules (check_rules.c); each adds its findings to k ------------- */

/* AssertPlanValid: the planned value against prior and config. */
void ck_plan_block(struct ck *k, struct block b, const sj_node *prior, const sj_node *config,
                   const sj_node *planned, int depth);
/* AssertObjectCompatible: the actual value against the planned one. */
void ck_compat_block(struct ck *k, struct block b, const sj_node *planned, const sj_node *actual,
                     int depth);
/* Every value known. */
void ck_find_unknowns(struct ck *k, const sj_node *v, int depth);
/* A write-only attribute is never kept: planned and stored null. */
void ck_find_write_only(struct ck *k, struct block b, const sj_node *v, int depth);
/* Does the path (AttributePath steps) lead to a value in v? */
int ck_path_exists(const sj_node *v, const sj_node *steps);

#endif
