/* launch: a tokenizer for the HCL the CLI config and lock file are written
 * in (hcl.c), for wrap.c's provider discovery. Enough structure to find
 * blocks, string attributes and their byte spans; anything it does not
 * understand is an OTHER token that is passed over. */
#ifndef TFTAP_CLI_HCL_H
#define TFTAP_CLI_HCL_H

#include <stddef.h>

enum tok_kind {
    TOK_IDENT,
    TOK_STRING,
    TOK_LBRACE,
    TOK_RBRACE,
    TOK_LBRACKET,
    TOK_RBRACKET,
    TOK_EQ,
    TOK_OTHER
};

struct tok {
    enum tok_kind kind;
    size_t start, end; /* byte span in the text, quotes included */
    char *text;        /* identifier, or the string's unescaped contents */
};

struct toks {
    struct tok *v;
    size_t n, cap;
};

/* Tokens of s[0..n) appended to out (at most HCL_MAX_TOKENS, 200,000:
 * TFTAP_ELIMIT past them). 0 or a TFTAP_E* code; out is the caller's to free either way
 * (hcl_toks_done). */
int hcl_tokenize(const char *s, size_t n, struct toks *out);
void hcl_toks_done(struct toks *t);

/* Walk the tokens calling back for every block and every attribute whose
 * value is a single token. path[0..depth) names the enclosing blocks (a
 * block's first label replaces nothing: labels are passed separately).
 * Unbalanced braces, or blocks nested deeper than HCL_MAX_DEPTH (32), end
 * the walk there. */
struct hcl_walk_cb {
    void (*attr)(void *ctx, const char *const *path, int depth, const struct tok *key,
                 const struct tok *value);
    void (*block)(void *ctx, const char *const *path, int depth, const struct tok *first,
                  const struct tok *open, const struct tok *close);
    void *ctx;
};

void hcl_walk(const struct toks *t, const struct hcl_walk_cb *cb);

#endif
