/* decoder internals: bounded protobuf-c parsing and by-name field access,
 * shared by the schema model and the message renderer.
 *
 * Messages returned by dec_pb_unpack belong to the caller and are released
 * with dec_pb_free (which accepts NULL). Accessors never fail: a field that
 * the message type lacks reads as absent/empty/zero, so one code path serves
 * both protocol versions. */
#ifndef TFTAP_DECODER_PB_INT_H
#define TFTAP_DECODER_PB_INT_H

#include <protobuf-c/protobuf-c.h>

#include "decoder/decoder.h"

/* Parse n bytes as a message of type d. Before protobuf-c sees them the bytes
 * are walked once to bound message nesting (protobuf-c recurses without a
 * limit), and unpacking draws from a budget proportional to n. Returns 0,
 * TFTAP_EDECODE (malformed), TFTAP_ELIMIT (too large or too deep) or
 * TFTAP_ENOMEM, with err set. */
int dec_pb_unpack(const ProtobufCMessageDescriptor *d, const void *p, size_t n,
                  const dec_limits *lim, ProtobufCMessage **out, dec_error *err);
void dec_pb_free(ProtobufCMessage *m);

/* A big field left out of an unpacked message (dec_pb_unpack_hollow):
 * the empty message unpacked in its place (stub), and where the bytes of
 * the real one are, in the caller's buffer. */
typedef struct dec_pb_hole {
    uint32_t number;
    const uint8_t *p;
    size_t n;
    const ProtobufCMessage *stub;
} dec_pb_hole;
#define DEC_PB_MAX_HOLES 8

/* dec_pb_unpack without copying big values: each top-level, non-repeated
 * message field whose type hollow() accepts and whose encoding is at least
 * min bytes (at most DEC_PB_MAX_HOLES, each occurring once) is unpacked as
 * an empty message, and holes[] (*nholes of them) say where its bytes are.
 * protobuf-c copies every bytes field it unpacks: a 100 MiB DynamicValue
 * would otherwise be held twice. p must outlive the use of holes. */
int dec_pb_unpack_hollow(const ProtobufCMessageDescriptor *d, const void *p, size_t n,
                         const dec_limits *lim, size_t min,
                         int (*hollow)(const ProtobufCMessageDescriptor *), dec_pb_hole *holes,
                         size_t *nholes, ProtobufCMessage **out, dec_error *err);

/* The last top-level length-delimited occurrence of field number `field` in
 * the serialized bytes (proto3: the last one wins), without unpacking.
 * Returns 1 and sets *v and *vn if found, 0 if absent, TFTAP_EDECODE if the bytes
 * are not a well-formed message. */
int dec_pb_scan_bytes(const void *p, size_t n, uint32_t field, const void **v, size_t *vn);

/* By-name accessors over any message (m may be NULL). */
const ProtobufCFieldDescriptor *dec_pb_field(const ProtobufCMessage *m, const char *name);
/* Whether field f of m holds a value: always for plain proto3 scalars and
 * repeated fields; per has_/case/pointer for optional, oneof and messages. */
int dec_pb_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);
const char *dec_pb_string(const ProtobufCMessage *m, const char *name); /* "" if absent */
int dec_pb_bool(const ProtobufCMessage *m, const char *name);
int64_t dec_pb_int(const ProtobufCMessage *m, const char *name); /* ints and enums */
/* Bytes (NULL/0 if absent). */
const uint8_t *dec_pb_bytes(const ProtobufCMessage *m, const char *name, size_t *len);
const ProtobufCMessage *dec_pb_message(const ProtobufCMessage *m, const char *name);
/* Repeated message field: *items gets the array; returns the count. */
size_t dec_pb_messages(const ProtobufCMessage *m, const char *name,
                       ProtobufCMessage *const **items);

/* A map<string, ...> entry message (key = 1, value = 2). */
int dec_pb_is_map_entry(const ProtobufCMessageDescriptor *d);

#endif
