/* libFuzzer target: the HCL tokenizer and walker (launch/hcl.c), which read
 * the user's CLI config and the working directory's lock file. Every token
 * must lie inside the text, identifiers and strings carry their text, and
 * the walk hands back only tokens of the list with a path as deep as it
 * says, however the braces and brackets fall. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launch/hcl_int.h"
#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct walked {
    const struct toks *t;
};

static void in_list(const struct toks *t, const struct tok *k)
{
    if (k < t->v || k >= t->v + t->n)
        abort();
}

static void check_path(const char *const *path, int depth)
{
    if (depth < 0 || depth > 32)
        abort();
    for (int i = 0; i < depth; i++)
        if (path[i] != NULL)
            (void)strlen(path[i]); /* readable, NUL-terminated */
}

static void on_attr(void *ctx, const char *const *path, int depth, const struct tok *key,
                    const struct tok *value)
{
    const struct walked *w = ctx;
    check_path(path, depth);
    in_list(w->t, key);
    in_list(w->t, value);
    if (value != key + 2 || key[1].kind != TOK_EQ)
        abort(); /* key, '=', value */
}

static void on_block(void *ctx, const char *const *path, int depth, const struct tok *first,
                     const struct tok *open, const struct tok *close)
{
    const struct walked *w = ctx;
    check_path(path, depth);
    in_list(w->t, first);
    in_list(w->t, open);
    in_list(w->t, close);
    if (open->kind != TOK_LBRACE || close->kind != TOK_RBRACE || first > open || open >= close)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct toks t = {0};
    if (hcl_tokenize((const char *)data, size, &t) == 0) {
        for (size_t i = 0; i < t.n; i++) {
            const struct tok *k = &t.v[i];
            if (k->start >= k->end || k->end > size || (i > 0 && k->start < t.v[i - 1].end))
                abort();
            if ((k->kind == TOK_IDENT || k->kind == TOK_STRING) != (k->text != NULL))
                abort();
        }
        struct walked w = {&t};
        hcl_walk(&t, &(struct hcl_walk_cb){.attr = on_attr, .block = on_block, .ctx = &w});
    }
    hcl_toks_done(&t);
    return 0;
}
