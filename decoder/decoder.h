/* decoder: cty types, DynamicValue decoding (msgpack and JSON) to the
 * decoded-value JSON contract (docs/decoded-values.md), provider schemas, and
 * plugin-protocol messages rendered as JSON.
 *
 * Everything here is pure computation on caller-supplied bytes: no I/O, no
 * printing, no global state; safe to use from several threads on distinct
 * objects. Input bytes are untrusted: every entry point is bounded by
 * dec_limits and reports failures as a dec_error naming the path.
 *
 * Ownership: objects returned through `**out` belong to the caller and are
 * released with their _free function (which accepts NULL); output text is
 * appended to a caller-owned tftap_buf; a dec_error is caller storage that
 * must be released with dec_error_done(). */
#ifndef TFTAP_DECODER_H
#define TFTAP_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* ---- limits and errors ------------------------------------------------ */

#define DEC_DEFAULT_MAX_DEPTH 256u
#define DEC_DEFAULT_MAX_BYTES ((size_t)256 << 20) /* 256 MiB, as providers allow */

typedef struct dec_limits {
    unsigned max_depth; /* nesting levels of values and types; 0 = default */
    size_t max_bytes;   /* largest payload accepted; 0 = default */
} dec_limits;

/* A decode failure: code is a TFTAP_E* value; path is where in the value it
 * happened, in the form `.tags["x"][2]` ("" for the root); reason is a short
 * lowercase phrase. Both strings are owned by the error. */
typedef struct dec_error {
    int code;
    char *path;
    char *reason;
} dec_error;

#define DEC_ERROR_INIT                                                                             \
    {                                                                                              \
        0, NULL, NULL                                                                              \
    }
void dec_error_done(dec_error *err);
/* Appends "decode error at <path>: <reason>" (path "." for the root). */
void dec_error_format(const dec_error *err, tftap_buf *out);

/* ---- cty types ---------------------------------------------------------- */

typedef struct dec_type dec_type; /* immutable once built */

enum dec_kind {
    DEC_STRING,
    DEC_NUMBER,
    DEC_BOOL,
    DEC_DYNAMIC,
    DEC_LIST,
    DEC_SET,
    DEC_MAP,
    DEC_OBJECT,
    DEC_TUPLE,
};

/* Parse cty type JSON (`"string"`, `["list","number"]`,
 * `["object",{...},["optional","a"]]`, ...). */
int dec_type_parse(const char *json, size_t len, const dec_limits *lim, dec_type **out,
                   dec_error *err);
void dec_type_free(dec_type *t);
/* Canonical type JSON (object attributes sorted by name). */
void dec_type_to_json(const dec_type *t, tftap_buf *out);

/* ---- values ------------------------------------------------------------- */

/* Called for every known, non-null value marked sensitive (or write-only) by
 * the schema: json/len is the value's decoded JSON; write 64 lowercase hex
 * digits and a NUL to out (an HMAC-SHA256 with a per-database key). */
typedef void (*dec_redact_fn)(void *ctx, const char *json, size_t len, char out[65]);

/* DynamicValues already rendered, for rendering the same bytes again (a
 * plan's proposed state is often its prior state byte for byte, and its
 * planned state the proposed one): dec_message_to_json copies the JSON of a
 * value whose type and bytes it has seen instead of decoding it again. One
 * memo serves one dec_opts and one schema (types are told apart by address):
 * clear it when either changes. Bounded (DEC_MEMO_MAX_BYTES). */
typedef struct dec_memo dec_memo;
#define DEC_MEMO_MAX_BYTES ((size_t)1 << 20)
dec_memo *dec_memo_new(void); /* NULL when out of memory */
void dec_memo_clear(dec_memo *m);
void dec_memo_free(dec_memo *m); /* accepts NULL */

typedef struct dec_opts {
    dec_limits limits;
    dec_redact_fn redact; /* NULL: sensitive values are shown as decoded */
    void *redact_ctx;
    dec_memo *memo; /* NULL: every value is decoded */
} dec_opts;

/* Decode one msgpack-encoded value of type t (exactly one value: trailing
 * bytes are an error) and append its JSON to out. opts may be NULL.
 * Returns 0, or TFTAP_EDECODE / TFTAP_ELIMIT / TFTAP_ENOMEM with err set;
 * on error out's length is restored to what it was on entry. */
int dec_msgpack_to_json(const dec_type *t, const void *p, size_t n, const dec_opts *opts,
                        tftap_buf *out, dec_error *err);

/* The same for go-cty's JSON encoding of a value of type t. */
int dec_json_to_json(const dec_type *t, const void *p, size_t n, const dec_opts *opts,
                     tftap_buf *out, dec_error *err);

/* A DynamicValue: msgpack if msgpack_len > 0, else json (both empty: null). */
int dec_dynamic_value_to_json(const dec_type *t, const void *msgpack, size_t msgpack_len,
                              const void *json, size_t json_len, const dec_opts *opts,
                              tftap_buf *out, dec_error *err);

/* ---- schemas ------------------------------------------------------------ */

typedef struct dec_schema dec_schema;

enum dec_schema_kind {
    DEC_SCHEMA_PROVIDER,      /* name ignored */
    DEC_SCHEMA_PROVIDER_META, /* name ignored */
    DEC_SCHEMA_RESOURCE,
    DEC_SCHEMA_DATA_SOURCE,
    DEC_SCHEMA_EPHEMERAL,
    DEC_SCHEMA_LIST_RESOURCE,
    DEC_SCHEMA_ACTION,
    DEC_SCHEMA_IDENTITY,    /* a managed resource type's identity schema */
    DEC_SCHEMA_STATE_STORE, /* a state store's configuration (protocol 6) */
};

/* The object type a block (or identity) schema implies, with attributes
 * marked sensitive/write-only; NULL when unknown. Owned by the schema. */
const dec_type *dec_schema_lookup(const dec_schema *s, enum dec_schema_kind kind, const char *name);
void dec_schema_free(dec_schema *s);

/* Build a schema from a serialized GetProviderSchema response of protocol 5
 * or 6 (also accepts the GetProviderSchema of either version's Provider
 * service as identified by protocol). */
int dec_schema_from_provider_schema(int protocol, const void *p, size_t n, const dec_limits *lim,
                                    dec_schema **out, dec_error *err);
/* Add identity schemas from a serialized GetResourceIdentitySchemas response. */
int dec_schema_add_identities(dec_schema *s, int protocol, const void *p, size_t n, dec_error *err);
/* Build a schema from `tofu providers schema -json` output. provider is the
 * provider address key (e.g. "registry.opentofu.org/hashicorp/random"), or
 * a suffix of it ("hashicorp/random", "random"), or NULL when the file holds
 * exactly one provider. */
int dec_schema_from_cli_json(const char *json, size_t n, const char *provider,
                             const dec_limits *lim, dec_schema **out, dec_error *err);

/* ---- plugin-protocol messages ------------------------------------------ */

/* The plugin-protocol versions whose messages are decoded: the contracts
 * proto/tfplugin5.proto and proto/tfplugin6.proto follow. */
#define DEC_PROTOCOL_5 "5.11"
#define DEC_PROTOCOL_6 "6.11"

/* 5 or 6 for "/tfplugin5.*" or "/tfplugin6.*" method paths, else 0. */
int dec_method_protocol(const char *method);

/* The type_name (or name) field of a provider request, which selects the
 * schema for the call's DynamicValues; *type_name is malloc'd or NULL. */
int dec_request_type_name(const char *method, const void *p, size_t n, char **type_name);

/* Render one serialized request (is_response = 0) or response message of the
 * given gRPC method path as a JSON object. DynamicValues are decoded with the
 * schema picked by method, field and type_name (from the request); without a
 * usable schema they are shown as {"$undecoded": {"size": N, "sha256": H}}.
 * Unknown fields are kept as "$unknown_fields"; private bytes are shown as
 * size and hash. Returns TFTAP_ENOTFOUND for a method it does not know. */
int dec_message_to_json(const char *method, int is_response, const void *p, size_t n,
                        const dec_schema *schema, const char *type_name, const dec_opts *opts,
                        tftap_buf *out, dec_error *err);

/* Redact again a message rendered by dec_message_to_json (json/n; a JSON
 * array is a stream's messages), for copying a record elsewhere: every
 * {"$sensitive": ...} object is handed to opts->redact as its JSON text,
 * and so is every known, non-null value the schema marks sensitive or
 * write-only that was stored in clear (a run recorded with sensitive values
 * kept), and stored state embedded as JSON (RawState) the same way by its
 * resource type's schema, legacy flatmap values each. The result replaces
 * each by {"$sensitive":"hmac-sha256:<hex from opts->redact>"}; the rest is
 * copied. opts->redact is required. Returns 0, TFTAP_EDECODE (json is not
 * JSON), TFTAP_ELIMIT, TFTAP_ENOMEM, or TFTAP_ENOTFOUND when a decoded value
 * has no type in schema (nothing tells which of its parts are secret: the
 * caller must not copy it); on error out is restored. */
int dec_message_json_redact(const char *method, int is_response, const char *json, size_t n,
                            const dec_schema *schema, const char *type_name, const dec_opts *opts,
                            tftap_buf *out, dec_error *err);

/* ---- the inverse, for replay ------------------------------------------ */

/* A message as dec_message_to_json renders it, back to protobuf bytes
 * (appended to out). method: gRPC path "/tfplugin6.Provider/PlanResourceChange";
 * type_name: the request's type name (responses do not carry it; it picks the
 * DynamicValue schema as dec_message_to_json does); schema may be NULL when
 * the method has no DynamicValue. Reduced forms (private bytes as size and
 * hash, undecoded DynamicValues) become empty bytes. Returns 0, or
 * TFTAP_ENOTFOUND for a method it does not know, TFTAP_EDECODE (err->path
 * names the JSON path), TFTAP_ELIMIT, TFTAP_ENOMEM; on error out's length is
 * restored. */
int dec_message_from_json(const char *method, int is_response, const char *type_name,
                          const char *json, size_t n, const dec_schema *schema,
                          const dec_limits *lim, tftap_buf *out, dec_error *err);

#endif
