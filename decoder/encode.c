/* decoder: the inverse of the value and message renderers, for replay. */
#include "decoder/decoder_int.h"

int dec_json_value_to_msgpack(const dec_type *t, const char *json, size_t n,
                              const dec_limits *lim, tftap_buf *out, dec_error *err)
{
    (void)t, (void)json, (void)n, (void)lim, (void)out;
    dec_error_set(err, TFTAP_EINVAL, "", "not implemented yet");
    return TFTAP_EINVAL;
}

int dec_message_from_json(const char *method, int is_response, const char *type_name,
                          const char *json, size_t n, const dec_schema *schema,
                          const dec_limits *lim, tftap_buf *out, dec_error *err)
{
    (void)method, (void)is_response, (void)type_name, (void)json, (void)n, (void)schema,
        (void)lim, (void)out;
    dec_error_set(err, TFTAP_EINVAL, "", "not implemented yet");
    return TFTAP_EINVAL;
}
