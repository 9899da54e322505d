/* decoder internals: what the message renderer (message.c), its redaction
 * (message_redact.c) and its inverse (encode.c) share, so all pick methods
 * and DynamicValue schemas by one rule table (method.c). Not for other
 * modules. */
#ifndef TFTAP_DECODER_MESSAGE_INT_H
#define TFTAP_DECODER_MESSAGE_INT_H

#include <protobuf-c/protobuf-c.h>

#include "decoder/decoder.h"
#include "decoder/pb_int.h"
#include "decoder/schema_int.h"

struct dec_method {
    const ProtobufCServiceDescriptor *service;
    const ProtobufCMethodDescriptor *m;
    int provider; /* a tfplugin Provider service method */
};

/* Resolve a gRPC path "/package.Service/Method": 1 found, 0 not. */
int dec_method_find(const char *path, struct dec_method *out);

/* A method's rule: a dec_schema_kind, or one of these. */
enum { DEC_RULE_NONE = -1, DEC_RULE_FUNCTION = -2 };
int dec_method_rule(const struct dec_method *m);

/* The request field naming the schema: the function for CallFunction, the
 * destination type for MoveResourceState, else type_name (action_type for
 * PlanAction and InvokeAction);
 * NULL when the method has none. */
const ProtobufCFieldDescriptor *dec_method_type_name_field(const struct dec_method *m);

/* What picks the type of a DynamicValue within one message. */
struct dec_value_ctx {
    const dec_schema *schema;
    int rule;
    const char *type_name;         /* selects the schema; may be NULL */
    const struct dec_function *fn; /* CallFunction */
    dec_type *t_bool, *t_number;   /* ValidateListResourceConfig's extras, made lazily */
};
/* The type a DynamicValue in field `field` (element `index` if repeated)
 * was encoded with, or NULL when we cannot know it. */
const dec_type *dec_value_ctx_type(struct dec_value_ctx *c, const char *field, size_t index);
void dec_value_ctx_done(struct dec_value_ctx *c);

/* A message being rendered (message.c) or redacted again
 * (message_redact.c): where the JSON goes, how, and what picks the types of
 * its DynamicValues. */
/* Messages of at least this size are unpacked without their DynamicValues
 * of at least DEC_HOLLOW_VALUE_MIN bytes (dec_pb_unpack_hollow). */
#define DEC_HOLLOW_MESSAGE_MIN ((size_t)1 << 20)
#define DEC_HOLLOW_VALUE_MIN ((size_t)64 << 10)

struct dec_render {
    tftap_buf *out;
    const dec_opts *opts;
    unsigned max_depth;
    struct dec_value_ctx c;
    /* DynamicValues left out of the unpacked message (big ones): their
     * bytes are read where they are. */
    const dec_pb_hole *holes;
    size_t nholes;
};

/* Stored state (RawState.json) rendered with its sensitive values redacted
 * by the resource type's schema, whole when the type is not known: -1
 * (nothing written) when it is not JSON, to be shown as text. */
int dec_raw_state_redacted(struct dec_render *r, const uint8_t *p, size_t n);

/* Message types and fields with a readable form. */
int dec_pb_is_dynamic_value(const ProtobufCMessageDescriptor *d);
int dec_pb_is_attribute_path(const ProtobufCMessageDescriptor *d);
int dec_pb_is_raw_state(const ProtobufCMessageDescriptor *d);
/* "private" or "*_private": bytes shown as size and hash. */
int dec_pb_is_private_field(const char *name);
/* A chunk of a state file a state store reads or writes (ReadStateBytes,
 * WriteStateBytes "bytes"): the state holds secrets in clear, and a chunk
 * cannot be decoded by itself to redact them. */
int dec_pb_is_state_bytes(const ProtobufCMessageDescriptor *owner, const char *field);
/* Bytes shown as the JSON they hold (RawState.json, cty type JSON). */
int dec_pb_is_json_bytes(const ProtobufCMessageDescriptor *owner, const char *field);

#endif
