/* decoder internals: what the message renderer needs from the schema model
 * beyond decoder.h. Everything returned is owned by the schema. */
#ifndef TFTAP_DECODER_SCHEMA_INT_H
#define TFTAP_DECODER_SCHEMA_INT_H

#include "decoder/decoder.h"

/* A provider function's signature: CallFunction sends argument i encoded
 * with params[i], and each argument past the last with variadic. */
struct dec_function {
    char *name;
    size_t nparams;
    dec_type **params;
    dec_type *variadic; /* NULL: not variadic */
    dec_type *ret;      /* NULL: unknown */
};

/* NULL when s is NULL or has no function of that name. */
const struct dec_function *dec_schema_function(const dec_schema *s, const char *name);

/* The type a CallFunction argument at index i is encoded with, or NULL. */
const dec_type *dec_function_arg_type(const struct dec_function *fn, size_t i);

/* Whether t is or contains `dynamic` anywhere. */
int dec_type_has_dynamic(const dec_type *t);

#endif
