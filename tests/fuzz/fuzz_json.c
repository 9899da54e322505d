/* libFuzzer target: common's JSON reader, which reads schema documents,
 * type JSON, shim metadata and the CLI's own JSON output. Whatever it
 * accepts must write back as JSON it accepts again, to the same text; and
 * sj_members, which checks without building, must agree with it on what is
 * JSON and on what each member is. */
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

/* sj_members of the same text: the same verdict, and spans that read as
 * the members sj_get finds (the first member's name, and two more). */
static void members_agree(const uint8_t *data, size_t size, unsigned depth, int rc,
                          const sj_node *root)
{
    const char *first = root && root->kind == SJ_OBJECT && root->child ? root->child->key : "";
    const char *keys[] = {first, "a", "b"};
    sj_span m[3];
    if (sj_members((const char *)data, size, depth, keys, 3, m) != rc)
        abort();
    for (size_t i = 0; i < 3; i++) {
        const sj_node *want = rc == 0 ? sj_get(root, keys[i]) : NULL;
        if ((want == NULL) != (m[i].text == NULL))
            abort();
        if (want == NULL)
            continue;
        if (m[i].text < (const char *)data || m[i].text + m[i].len > (const char *)data + size)
            abort();
        sj_doc *d = NULL;
        /* A member is one level below its object. */
        int mrc = sj_parse(m[i].text, m[i].len, depth ? depth : TFTAP_JSON_MAX_DEPTH, &d);
        if (mrc == TFTAP_ENOMEM)
            continue;
        if (mrc != 0 || !sj_equal(sj_root(d), want))
            abort();
        sj_free(d);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sj_doc *d = NULL;
    /* Half the writes go deeper than the default bound would allow, so
     * the depth limit itself is exercised at both ends. */
    unsigned depth = size && (data[0] & 1) ? 8 : 0;
    int rc = sj_parse((const char *)data, size, depth, &d);
    if (rc != TFTAP_ENOMEM)
        members_agree(data, size, depth, rc, rc == 0 ? sj_root(d) : NULL);
    if (rc == 0) {
        write_again(sj_root(d), 0);
        write_again(sj_root(d), 1);
    } else if (d != NULL || (rc != TFTAP_EDECODE && rc != TFTAP_ELIMIT && rc != TFTAP_ENOMEM)) {
        abort();
    }
    sj_free(d);
    return 0;
}
