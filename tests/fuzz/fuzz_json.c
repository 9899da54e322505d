/* libFuzzer target: common's JSON reader, which reads schema documents,
 * type JSON, shim metadata and the CLI's own JSON output. Whatever it
 * accepts must write back as JSON it accepts again, to the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_again(const sj_node *root, int sorted)
{
    tftap_buf once = TFTAP_BUF_INIT, twice = TFTAP_BUF_INIT;
    if (sorted ? sj_write_sorted(root, &once) != 0 : (sj_write(root, &once), 0))
        goto done; /* out of memory */
    if (tftap_buf_failed(&once))
        goto done;
    sj_doc *again = NULL;
    if (sj_parse(once.data, once.len, 0, &again) != 0)
        abort(); /* we wrote what we cannot read */
    if (sorted)
        sj_write_sorted(sj_root(again), &twice);
    else
        sj_write(sj_root(again), &twice);
    if (!sj_equal(root, sj_root(again)) || once.len != twice.len ||
        memcmp(once.data, twice.data, once.len) != 0)
        abort();
    sj_free(again);
done:
    tftap_buf_done(&once);
    tftap_buf_done(&twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sj_doc *d = NULL;
    /* Half the writes go deeper than the default bound would allow, so
     * the depth limit itself is exercised at both ends. */
    unsigned depth = size && (data[0] & 1) ? 8 : 0;
    int rc = sj_parse((const char *)data, size, depth, &d);
    if (rc == 0) {
        write_again(sj_root(d), 0);
        write_again(sj_root(d), 1);
    } else if (d != NULL || (rc != TFTAP_EDECODE && rc != TFTAP_ELIMIT && rc != TFTAP_ENOMEM)) {
        abort();
    }
    sj_free(d);
    return 0;
}
