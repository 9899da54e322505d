/* launch: the HCL tokenizer (hcl_int.h). Its input is a file anyone may have
 * written: bounded in tokens (HCL_MAX_TOKENS) and nesting (HCL_MAX_DEPTH). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "launch/hcl_int.h"
#include "common/common.h"

#define HCL_MAX_TOKENS 200000
#define HCL_MAX_DEPTH 32

void hcl_toks_done(struct toks *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].text);
    free(t->v);
    memset(t, 0, sizeof *t);
}

static int toks_push(struct toks *t, enum tok_kind kind, size_t start, size_t end, char *text)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        if (t->n >= HCL_MAX_TOKENS) {
            free(text);
            return TFTAP_ELIMIT;
        }
        struct tok *v = realloc(t->v, cap * sizeof *v);
        if (v == NULL) {
            free(text);
            return TFTAP_ENOMEM;
        }
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = (struct tok){kind, start, end, text};
    return 0;
}

static int is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

int hcl_tokenize(const char *s, size_t n, struct toks *out)
{
    size_t i = 0;
    int rc = 0;
    while (i < n && rc == 0) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',') {
            i++;
        } else if (c == '#' || (c == '/' && i + 1 < n && s[i + 1] == '/')) {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
                i++;
            i = i + 2 < n ? i + 2 : n;
        } else if (c == '"') {
            tftap_buf b = TFTAP_BUF_INIT;
            size_t start = i++;
            while (i < n && s[i] != '"' && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < n) {
                    char e = s[i + 1];
                    tftap_buf_putc(&b, e == 'n' ? '\n' : e == 't' ? '\t' : e);
                    i += 2;
                } else {
                    tftap_buf_putc(&b, s[i++]);
                }
            }
            if (i < n && s[i] == '"')
                i++;
            size_t len;
            tftap_buf_cstr(&b);
            if (tftap_buf_failed(&b)) {
                tftap_buf_done(&b);
                return TFTAP_ENOMEM;
            }
            char *text = tftap_buf_take(&b, &len);
            if (text == NULL && (text = strdup("")) == NULL)
                return TFTAP_ENOMEM;
            rc = toks_push(out, TOK_STRING, start, i, text);
        } else if (is_ident_char(c)) {
            size_t start = i;
            while (i < n && is_ident_char(s[i]))
                i++;
            char *text = strndup(s + start, i - start);
            if (text == NULL)
                return TFTAP_ENOMEM;
            rc = toks_push(out, TOK_IDENT, start, i, text);
        } else {
            enum tok_kind k = c == '{'   ? TOK_LBRACE
                              : c == '}' ? TOK_RBRACE
                              : c == '[' ? TOK_LBRACKET
                              : c == ']' ? TOK_RBRACKET
                              : c == '=' ? TOK_EQ
                                         : TOK_OTHER;
            rc = toks_push(out, k, i, i + 1, NULL);
            i++;
        }
    }
    return rc;
}

void hcl_walk(const struct toks *t, const struct hcl_walk_cb *cb)
{
    const char *path[HCL_MAX_DEPTH];
    size_t open_tok[HCL_MAX_DEPTH], first_tok[HCL_MAX_DEPTH];
    int depth = 0;
    size_t stmt = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct tok *k = &t->v[i];
        if (k->kind == TOK_LBRACE) {
            if (depth == HCL_MAX_DEPTH)
                return;
            first_tok[depth] = stmt < i ? stmt : i;
            path[depth] = stmt < i ? t->v[stmt].text : NULL;
            open_tok[depth] = i;
            depth++;
            stmt = i + 1;
        } else if (k->kind == TOK_RBRACE) {
            if (depth == 0)
                return; /* unbalanced: stop rather than guess */
            depth--;
            if (cb->block)
                cb->block(cb->ctx, path, depth, &t->v[first_tok[depth]], &t->v[open_tok[depth]], k);
            stmt = i + 1;
        } else if (k->kind == TOK_EQ && i > stmt && i + 1 < t->n) {
            const struct tok *v = &t->v[i + 1];
            if (v->kind == TOK_LBRACE)
                continue; /* key = { ... }: treated as a block named key */
            if (v->kind == TOK_LBRACKET) {
                int nest = 0;
                size_t j = i + 1;
                for (; j < t->n; j++) {
                    if (t->v[j].kind == TOK_LBRACKET)
                        nest++;
                    else if (t->v[j].kind == TOK_RBRACKET && --nest == 0)
                        break;
                }
                i = j;
                stmt = j + 1;
                continue;
            }
            if (cb->attr)
                cb->attr(cb->ctx, path, depth, &t->v[i - 1], v);
            i++;
            stmt = i + 1;
        }
    }
}
