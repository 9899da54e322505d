/* decoder internals shared by the decoder's own .c files; not for other modules. */
#ifndef TFTAP_DECODER_INT_H
#define TFTAP_DECODER_INT_H

#include "decoder/decoder.h"

struct dec_attr {
    char *name;
    size_t name_len;
    char *json_key; /* "name": as JSON, made by dec_type_new_object() (NULL before) */
    size_t json_key_len;
    dec_type *type;
    unsigned optional : 1;   /* listed in the object type's optional attributes */
    unsigned sensitive : 1;  /* redact this attribute's value */
    unsigned write_only : 1; /* write-only attribute (redacted like sensitive) */
};

struct dec_type {
    enum dec_kind kind;
    dec_type *elem;         /* list, set, map */
    size_t n;               /* object attributes or tuple elements */
    struct dec_attr *attrs; /* object: sorted bytewise by name, no duplicates */
    dec_type **elems;       /* tuple */
};

/* Builders used by the type parser and the schema model. They take
 * ownership of the dec_type arguments (also on failure). NULL on ENOMEM. */
dec_type *dec_type_new(enum dec_kind kind); /* primitive or dynamic */
dec_type *dec_type_new_collection(enum dec_kind kind, dec_type *elem);
dec_type *dec_type_new_tuple(dec_type **elems, size_t n); /* takes elems array */
/* attrs (malloc'd array, names malloc'd) is taken; sorts it; fails with
 * TFTAP_EINVAL on a duplicate name. */
int dec_type_new_object(struct dec_attr *attrs, size_t n, dec_type **out);
const struct dec_attr *dec_type_attr(const dec_type *t, const char *name, size_t len);

/* A map key as read from the input, for the duplicate-key check. */
struct dec_key {
    const char *s;
    size_t n;
};
/* Sorts keys; returns the index of the first key equal to the one before
 * it, or n when all are distinct. */
size_t dec_keys_duplicate(struct dec_key *keys, size_t n);

/* Error helpers: set err (if not yet set) with a formatted reason. */
void dec_error_set(dec_error *err, int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- shared by the msgpack and JSON value decoders ---------------------- */

/* One step of the path from the root to the value being decoded; kept on a
 * stack and only turned into text when an error is reported. */
struct dec_step {
    enum { DEC_STEP_ATTR, DEC_STEP_KEY, DEC_STEP_INDEX } kind;
    const char *name; /* ATTR, KEY: not NUL-terminated, owned by the input */
    size_t len;
    uint64_t index;
};

struct dec_walk {
    tftap_buf *out;
    const dec_opts *opts;
    dec_error *err;
    unsigned max_depth;
    unsigned depth;         /* number of steps on the stack */
    struct dec_step *steps; /* max_depth + 1 entries */
};

int dec_walk_init(struct dec_walk *w, const dec_opts *opts, tftap_buf *out, dec_error *err);
void dec_walk_done(struct dec_walk *w);

/* The frame both value decoders share: checks the size limit, sets up the
 * walk, calls body, turns a failed buffer into ENOMEM, and on any error
 * restores out to its length on entry. */
typedef int (*dec_walk_body)(struct dec_walk *w, const dec_type *t, const void *p, size_t n);
int dec_walk_run(const dec_type *t, const void *p, size_t n, const dec_opts *opts, tftap_buf *out,
                 dec_error *err, dec_walk_body body);
/* Push a step; fails with TFTAP_ELIMIT past max_depth. */
int dec_walk_push(struct dec_walk *w, int kind, const char *name, size_t len, uint64_t index);
static inline void dec_walk_pop(struct dec_walk *w)
{
    w->depth--;
}
/* Record an error at the current path; returns code. */
int dec_walk_fail(struct dec_walk *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Append the current path as text (`.a["k"][3]`). */
void dec_path_format(const struct dec_step *steps, unsigned n, tftap_buf *out);

/* Replace the JSON of a sensitive value (out->data[start..]) by its redacted
 * form when the options ask for redaction. */
void dec_walk_redact(struct dec_walk *w, size_t start);

/* UTF-8 validity of n bytes (rejects overlongs, surrogates, > U+10FFFF). */
int dec_utf8_valid(const char *s, size_t n);

/* Numbers (number.c). Append JSON text for: a float64 in shortest
 * round-trip form ("Infinity"/"-Infinity" strings for infinities; NaN is an
 * error: returns TFTAP_EDECODE); a decimal string in go-cty's accepted
 * syntax (sign, digits, optional fraction, optional e/E exponent, Inf)
 * normalised to a valid JSON number (returns TFTAP_EDECODE if invalid,
 * TFTAP_ELIMIT for a decimal exponent of more than eight digits). */
int dec_number_float(double v, tftap_buf *out);
int dec_number_decimal(const char *s, size_t n, tftap_buf *out);
/* Whether s/n is a valid JSON number token. */
int dec_json_number_valid(const char *s, size_t n);

/* ---- encode_value.c, for encode.c's messages ---- */

/* The nesting a walk allows: lim's, or DEC_DEFAULT_MAX_DEPTH. */
unsigned dec_limits_depth(const dec_limits *lim);
/* Parse a decoded value's or a rendered message's JSON within lim (its
 * bytes, and the nesting the value contract needs beyond the value's own);
 * err says why not. */
int dec_encode_parse(const char *json, size_t n, const dec_limits *lim, sj_doc **doc,
                     dec_error *err);
/* Encode one parsed value of type t as msgpack into out; err's path is
 * relative to the value. */
int dec_encode_value_node(const dec_type *t, const sj_node *v, const dec_limits *lim,
                          tftap_buf *out, dec_error *err);

/* A decoded value (the JSON contract, docs/decoded-values.md) back to cty
 * msgpack for type t, appended to out. Redacted values ({"$sensitive": ...})
 * cannot be undone and become a value of the right type (docs/replay.md,
 * "What replay sends back"). lim may be NULL. Returns 0, or TFTAP_EDECODE
 * (input does not fit t: err->path names where) / TFTAP_ELIMIT /
 * TFTAP_ENOMEM; on error out's length is restored. */
int dec_json_value_to_msgpack(const dec_type *t, const char *json, size_t n, const dec_limits *lim,
                              tftap_buf *out, dec_error *err);

#endif
