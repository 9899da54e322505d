/* decoder: the methods of the plugin protocol's services, and what picks
 * the type of each DynamicValue a method's messages carry (the schema kind
 * its request's type name selects, or a function's signature). What the
 * message renderer (message.c), its redaction (message_redact.c) and its
 * inverse (encode.c) share, declared in message_int.h. */
#include "decoder/decoder_int.h"
#include "decoder/message_int.h"
#include "decoder/pb_int.h"
#include "decoder/schema_int.h"

#include <stdlib.h>
#include <string.h>

#include "plugin/grpc_broker.pb-c.h"
#include "plugin/grpc_controller.pb-c.h"
#include "plugin/grpc_stdio.pb-c.h"
#include "tfplugin5.pb-c.h"
#include "tfplugin6.pb-c.h"

static const ProtobufCServiceDescriptor *const services[] = {
    &tfplugin5__provider__descriptor,    &tfplugin5__provisioner__descriptor,
    &tfplugin6__provider__descriptor,    &plugin__grpcbroker__descriptor,
    &plugin__grpccontroller__descriptor, &plugin__grpcstdio__descriptor,
};

/* How a provider method's DynamicValues pick their schema: the kind of
 * schema named by the request's type name, or a function signature. */
static const struct method_rule {
    const char *method;
    int rule;
} method_rules[] = {
    {"ApplyResourceChange", DEC_SCHEMA_RESOURCE},
    {"CallFunction", DEC_RULE_FUNCTION},
    {"CloseEphemeralResource", DEC_SCHEMA_EPHEMERAL},
    {"Configure", DEC_SCHEMA_PROVIDER},
    {"ConfigureProvider", DEC_SCHEMA_PROVIDER},
    {"ConfigureStateStore", DEC_SCHEMA_STATE_STORE},
    {"GenerateResourceConfig", DEC_SCHEMA_RESOURCE},
    {"ImportResourceState", DEC_SCHEMA_RESOURCE},
    {"InvokeAction", DEC_SCHEMA_ACTION},
    {"ListResource", DEC_SCHEMA_LIST_RESOURCE},
    {"MoveResourceState", DEC_SCHEMA_RESOURCE},
    {"OpenEphemeralResource", DEC_SCHEMA_EPHEMERAL},
    {"PlanAction", DEC_SCHEMA_ACTION},
    {"PlanResourceChange", DEC_SCHEMA_RESOURCE},
    {"PrepareProviderConfig", DEC_SCHEMA_PROVIDER},
    {"ReadDataSource", DEC_SCHEMA_DATA_SOURCE},
    {"ReadResource", DEC_SCHEMA_RESOURCE},
    {"RenewEphemeralResource", DEC_SCHEMA_EPHEMERAL},
    {"UpgradeResourceIdentity", DEC_RULE_NONE}, /* identity data only */
    {"UpgradeResourceState", DEC_SCHEMA_RESOURCE},
    {"ValidateActionConfig", DEC_SCHEMA_ACTION},
    {"ValidateDataResourceConfig", DEC_SCHEMA_DATA_SOURCE},
    {"ValidateDataSourceConfig", DEC_SCHEMA_DATA_SOURCE},
    {"ValidateEphemeralResourceConfig", DEC_SCHEMA_EPHEMERAL},
    {"ValidateListResourceConfig", DEC_SCHEMA_LIST_RESOURCE},
    {"ValidateProviderConfig", DEC_SCHEMA_PROVIDER},
    {"ValidateResourceConfig", DEC_SCHEMA_RESOURCE},
    {"ValidateResourceTypeConfig", DEC_SCHEMA_RESOURCE},
    {"ValidateStateStoreConfig", DEC_SCHEMA_STATE_STORE},
};

int dec_method_find(const char *path, struct dec_method *out)
{
    if (!path || path[0] != '/')
        return 0;
    const char *slash = strchr(path + 1, '/');
    if (!slash || !slash[1])
        return 0;
    size_t sl = (size_t)(slash - (path + 1));
    for (size_t i = 0; i < sizeof services / sizeof services[0]; i++) {
        const ProtobufCServiceDescriptor *s = services[i];
        if (strlen(s->name) != sl || memcmp(s->name, path + 1, sl) != 0)
            continue;
        const ProtobufCMethodDescriptor *m =
            protobuf_c_service_descriptor_get_method_by_name(s, slash + 1);
        if (!m)
            return 0;
        out->service = s;
        out->m = m;
        out->provider =
            s == &tfplugin5__provider__descriptor || s == &tfplugin6__provider__descriptor;
        return 1;
    }
    return 0;
}

int dec_method_rule(const struct dec_method *m)
{
    if (!m->provider)
        return DEC_RULE_NONE;
    size_t lo = 0, hi = sizeof method_rules / sizeof method_rules[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->m->name, method_rules[mid].method);
        if (c == 0)
            return method_rules[mid].rule;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return DEC_RULE_NONE;
}

const ProtobufCFieldDescriptor *dec_method_type_name_field(const struct dec_method *m)
{
    const ProtobufCMessageDescriptor *d = m->m->input;
    if (!m->provider)
        return NULL;
    if (strcmp(m->m->name, "CallFunction") == 0)
        return protobuf_c_message_descriptor_get_field_by_name(d, "name");
    if (strcmp(m->m->name, "MoveResourceState") == 0)
        return protobuf_c_message_descriptor_get_field_by_name(d, "target_type_name");
    /* type_name, or action_type (PlanAction, InvokeAction); WriteStateBytes
     * names its store in the first chunk's meta, not looked at: it carries
     * no DynamicValue. */
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(d, "type_name");
    if (!f)
        f = protobuf_c_message_descriptor_get_field_by_name(d, "action_type");
    return f && f->type == PROTOBUF_C_TYPE_STRING ? f : NULL;
}

int dec_method_protocol(const char *method)
{
    if (!method)
        return 0;
    if (strncmp(method, "/tfplugin5.", 11) == 0)
        return 5;
    if (strncmp(method, "/tfplugin6.", 11) == 0)
        return 6;
    return 0;
}

int dec_request_type_name(const char *method, const void *p, size_t n, char **type_name)
{
    *type_name = NULL;
    struct dec_method m;
    if (!dec_method_find(method, &m))
        return TFTAP_ENOTFOUND;
    const ProtobufCFieldDescriptor *f = dec_method_type_name_field(&m);
    if (!f)
        return 0;
    const void *v;
    size_t vn;
    int rc = dec_pb_scan_bytes(p, n, f->id, &v, &vn);
    if (rc < 0)
        return rc;
    /* Absent, empty, or not text we could use as a lookup key: no name. */
    if (rc == 0 || vn == 0 || memchr(v, 0, vn) || !dec_utf8_valid(v, vn))
        return 0;
    char *s = malloc(vn + 1);
    if (!s)
        return TFTAP_ENOMEM;
    memcpy(s, v, vn);
    s[vn] = '\0';
    *type_name = s;
    return 0;
}

/* ---- message types and fields with a readable form -------------------------- */

int dec_pb_is_dynamic_value(const ProtobufCMessageDescriptor *d)
{
    return d == &tfplugin5__dynamic_value__descriptor || d == &tfplugin6__dynamic_value__descriptor;
}

int dec_pb_is_attribute_path(const ProtobufCMessageDescriptor *d)
{
    return d == &tfplugin5__attribute_path__descriptor ||
           d == &tfplugin6__attribute_path__descriptor;
}

int dec_pb_is_raw_state(const ProtobufCMessageDescriptor *d)
{
    return d == &tfplugin5__raw_state__descriptor || d == &tfplugin6__raw_state__descriptor;
}

int dec_pb_is_state_bytes(const ProtobufCMessageDescriptor *owner, const char *field)
{
    return (owner == &tfplugin6__read_state_bytes__response__descriptor ||
            owner == &tfplugin6__write_state_bytes__request_chunk__descriptor) &&
           strcmp(field, "bytes") == 0;
}

int dec_pb_is_private_field(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, "private") == 0 || (n > 8 && strcmp(name + n - 8, "_private") == 0);
}

int dec_pb_is_json_bytes(const ProtobufCMessageDescriptor *owner, const char *field)
{
    return (dec_pb_is_raw_state(owner) && strcmp(field, "json") == 0) || strcmp(field, "type") == 0;
}

static const dec_type *lazy_type(dec_type **slot, enum dec_kind kind)
{
    if (!*slot)
        *slot = dec_type_new(kind);
    return *slot;
}

const dec_type *dec_value_ctx_type(struct dec_value_ctx *r, const char *field, size_t index)
{
    if (strcmp(field, "provider_meta") == 0)
        return dec_schema_lookup(r->schema, DEC_SCHEMA_PROVIDER_META, NULL);
    if (strcmp(field, "identity_data") == 0)
        return dec_schema_lookup(r->schema, DEC_SCHEMA_IDENTITY, r->type_name);
    switch (r->rule) {
    case DEC_RULE_NONE:
        return NULL;
    case DEC_RULE_FUNCTION:
        if (strcmp(field, "arguments") == 0)
            return dec_function_arg_type(r->fn, index);
        if (strcmp(field, "result") == 0)
            return r->fn ? r->fn->ret : NULL;
        return NULL;
    case DEC_SCHEMA_LIST_RESOURCE:
        if (strcmp(field, "resource_object") == 0)
            return dec_schema_lookup(r->schema, DEC_SCHEMA_RESOURCE, r->type_name);
        if (strcmp(field, "include_resource_object") == 0)
            return lazy_type(&r->t_bool, DEC_BOOL);
        if (strcmp(field, "limit") == 0)
            return lazy_type(&r->t_number, DEC_NUMBER);
        return dec_schema_lookup(r->schema, DEC_SCHEMA_LIST_RESOURCE, r->type_name);
    default:
        return dec_schema_lookup(r->schema, (enum dec_schema_kind)r->rule, r->type_name);
    }
}

void dec_value_ctx_done(struct dec_value_ctx *c)
{
    dec_type_free(c->t_bool);
    dec_type_free(c->t_number);
    c->t_bool = c->t_number = NULL;
}
