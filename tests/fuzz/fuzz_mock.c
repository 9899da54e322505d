/* libFuzzer target: mock blocks for tofu test from recorded JSON (any JSON:
 * a database or bundle may come from someone else). An input is up to four
 * texts separated by NUL bytes: a recorded value, its configuration, the
 * type's block schema, and a second instance's value. Malformed JSON must
 * be refused cleanly; anything written must be UTF-8 with no control
 * character but newlines (strings are escaped, comments cleaned). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "decoder/decoder_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const tftap_buf *out)
{
    if (!dec_utf8_valid(out->data, out->len))
        abort();
    for (size_t i = 0; i < out->len; i++)
        if ((unsigned char)out->data[i] < 0x20 && out->data[i] != '\n')
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *part[4] = {NULL, NULL, NULL, NULL};
    size_t np = 0;
    const char *p = copy, *end = copy + size;
    while (np < 4 && p <= end) {
        part[np++] = p;
        p += strlen(p) + 1;
    }
    /* The value alone, typed by the third text read as a cty type. */
    tftap_buf out = TFTAP_BUF_INIT;
    int rc = analysis_hcl_value(part[0], strlen(part[0]), part[2], (int)(size & 7), &out);
    if (rc == 0)
        check_text(&out);
    else if (rc != TFTAP_EDECODE && rc != TFTAP_EINVAL && rc != TFTAP_ENOMEM)
        abort();
    tftap_buf_reset(&out);
    analysis_mocks *m = NULL;
    if (analysis_mocks_new(&m) == 0) {
        analysis_mock_value v = {(size & 1) ? "registry.opentofu.org/t/test" : NULL,
                                 (size & 2) != 0,
                                 "test_thing",
                                 (size & 4) ? "test_thing.a[\"k\\n\"]" : NULL,
                                 "ApplyResourceChange",
                                 1,
                                 part[2],
                                 part[0],
                                 part[1],
                                 0};
        rc = analysis_mocks_add(m, &v);
        if (rc == 0 && part[3]) {
            v.address = "test_thing.b";
            v.rpc = "PlanResourceChange";
            v.call_id = 2;
            v.value = part[3];
            rc = analysis_mocks_add(m, &v);
        }
        size_t n = 0;
        if (rc == 0)
            rc = analysis_mocks_render(m, 1, &out, &n);
        if (rc == 0)
            check_text(&out);
        else if (rc != TFTAP_EDECODE && rc != TFTAP_ENOMEM)
            abort();
        analysis_mocks_free(m);
    }
    tftap_buf_done(&out);
    free(copy);
    return 0;
}
