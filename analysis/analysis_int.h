/* analysis: private declarations shared by the module's files. */
#ifndef TFTAP_ANALYSIS_INT_H
#define TFTAP_ANALYSIS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "common/common.h"

/* How deep analysis reads the JSON the store wrote. */
#define ANALYSIS_JSON_MAX_DEPTH TFTAP_JSON_MAX_DEPTH

/* The address of an instance of a raw state's resource (`state pull`,
 * format 4) as the CLI writes it: module, "data." for a data source, type,
 * name, index key. Appended to a. */
void analysis_raw_address(tftap_buf *a, const sj_node *module, int data, const sj_node *type,
                          const sj_node *name, const sj_node *key);

/* A finding's text as JSON (check_findings.c): a string, or null when
 * NULL; the decoded-value JSON a check wrote itself, or null when NULL or
 * empty. */
void analysis_json_str(tftap_buf *b, const char *s);
void analysis_json_raw(tftap_buf *b, const char *json);

/* What the schema says about a value (hint.c), followed down it: a cty
 * type (JSON), or nested attributes (protocol 6 nested types, and a
 * block's own attributes) with their nesting. All NULL: nothing known.
 * The nodes are the schema's, borrowed. */
struct analysis_hint {
    const sj_node *ty;    /* cty type JSON */
    const sj_node *attrs; /* array of schema attributes */
    const char *nesting;  /* of attrs: "SINGLE", "LIST", "SET", "MAP"; NULL: one object */
};
/* Is t ("string", or ["list", ...]) of that kind? */
int analysis_type_is(const sj_node *t, const char *kind);
/* A schema attribute's hint. */
struct analysis_hint analysis_hint_of_attr(const sj_node *a);
/* Nested attributes as a LIST, SET or MAP of objects? */
int analysis_hint_nested_collection(const struct analysis_hint *h);
/* Element i of a list, set, map or tuple. */
struct analysis_hint analysis_hint_elem(const struct analysis_hint *h, size_t i);
/* The member key of an object or a map. */
struct analysis_hint analysis_hint_member(const struct analysis_hint *h, const char *key,
                                          size_t klen);

/* What the report says about the two runs themselves (set by
 * analysis_diff_runs; empty for analysis_diff_calls). */
struct analysis_diff_meta {
    int set;
    int64_t run[2];
    char *command[2];       /* "tofu plan -out=p" */
    tftap_buf providers[2]; /* "address version\n" lines */
    /* The calls analysis_diff_runs read, which the diff borrows. */
    analysis_diff_call *owned_calls[2];
    size_t nowned[2];
};
/* Free what m owns (diff.c, with the diff). */
void analysis_diff_meta_done(struct analysis_diff_meta *m);
/* The runs told as text, Markdown or JSON (diff_runs.c). */
void analysis_diff_meta_text(const struct analysis_diff_meta *m, tftap_buf *out);
void analysis_diff_meta_markdown(const struct analysis_diff_meta *m, tftap_buf *out);
/* Appends "\"runs\":[...]," (nothing when unset). */
void analysis_diff_meta_json(const struct analysis_diff_meta *m, tftap_buf *out);
/* The meta of an analysis_diff, for analysis_diff_runs to fill. */
struct analysis_diff_meta *analysis_diff_meta_of(struct analysis_diff *d);

/* ---- used by the module and its tests only ---- */

/* How many input differences a diff found (the tests'). */
size_t analysis_diff_input_count(const analysis_diff *d);

/* A value known to be secret otherwise (a sensitive variable's value as
 * given on the command line or in the environment). Empty: ignored. */
int analysis_secrets_add_value(analysis_secrets *a, const char *s, size_t n);

/* Append a decoded value (decoded-value JSON, len bytes) as an HCL literal
 * expression that OpenTofu reads back as the same value: strings quoted
 * with \\, \", \n, \r, \t, \uNNNN escapes and "${" / "%{" written "$${" /
 * "%%{"; numbers digit for digit; objects and maps with their keys in byte
 * order (keys that are no identifier quoted); lists, sets and tuples in
 * their order; null as null. type_json (the value's cty type JSON, or NULL:
 * none) lets a dynamic value ({"type": T, "value": V}) read as its value.
 * indent: the spaces the enclosing line starts with. Returns 0,
 * TFTAP_EDECODE (json is malformed), TFTAP_EINVAL (the value holds an
 * unknown, a redacted sensitive value or an infinite number, none of which
 * HCL can write), TFTAP_ENOMEM; on error out may hold a part. */
int analysis_hcl_value(const char *json, size_t len, const char *type_json, int indent,
                       tftap_buf *out);

/* Append s (n bytes) as a quoted HCL string (HCL 2: \\, \", \n, \r, \t,
 * \uNNNN escapes and "${" / "%{" written "$${" / "%%{"). */
void analysis_hcl_string(const char *s, size_t n, tftap_buf *out);

#endif
