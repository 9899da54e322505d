/* analysis: the run diff as text, JSON or Markdown (analysis_diff_render). */
#include <string.h>

#include "analysis/diff_int.h"

static const char *const src_names[] = {"config", "planned", "prior", "unknown", "provider"};

static const char *const kind_names[] = {"only_in_a", "only_in_b", "status",           "action",
                                         "attribute", "input",     "requires_replace", "diagnostic",
                                         "private",   "deferred",  "schema_version",   "schema"};

/* ---- rendering ------------------------------------------------------------------ */

static const char *label(const struct pair *p)
{
    const analysis_diff_call *c = p->a ? p->a : p->b;
    return c->address ? c->address : c->type_name ? c->type_name : c->provider ? c->provider : "";
}

static void put_value(tftap_buf *b, const char *json, int has, enum src s)
{
    if (!has) {
        tftap_buf_puts(b, "(absent)");
        return;
    }
    if (s == SRC_UNKNOWN) {
        tftap_buf_puts(b, "(known after apply)");
        if (json && strcmp(json, "{\"$unknown\":{}}") != 0) {
            tftap_buf_putc(b, ' ');
            tftap_buf_puts(b, json);
        }
        return;
    }
    tftap_buf_puts(b, json ? json : "null");
    tftap_buf_printf(b, " (%s)",
                     s == SRC_CONFIG    ? "from config"
                     : s == SRC_PLANNED ? "as planned"
                     : s == SRC_PRIOR   ? "from prior state"
                                        : "chosen by provider");
}

/* A diagnostic's JSON as "Warning: summary (at .path)". */
static void put_diag(tftap_buf *b, const char *json)
{
    sj_doc *doc = NULL;
    if (!json || sj_parse(json, strlen(json), 8, &doc) != 0) {
        tftap_buf_puts(b, json ? json : "");
        return;
    }
    const sj_node *r = sj_root(doc);
    const char *sev = analysis_diff_str_of(r, "severity");
    tftap_buf_puts(b, strcmp(sev, "WARNING") == 0 ? "Warning: "
                      : strcmp(sev, "ERROR") == 0 ? "Error: "
                                                  : sev);
    tftap_buf_puts(b, analysis_diff_str_of(r, "summary"));
    const sj_node *at = sj_get(r, "attribute");
    if (at && at->kind == SJ_STRING)
        tftap_buf_printf(b, " (at %s)", at->str);
    sj_free(doc);
}

struct colors {
    const char *add, *del, *chg, *dim, *reset;
};

static void text_finding(tftap_buf *b, const struct finding *f, const struct pair *p,
                         const struct colors *k)
{
    const analysis_diff_call *c = p->a ? p->a : p->b;
    switch (f->kind) {
    case K_ONLY_A:
    case K_ONLY_B:
        tftap_buf_printf(b, "    %s%s %s only in run %s%s", f->kind == K_ONLY_A ? k->del : k->add,
                         f->kind == K_ONLY_A ? "-" : "+", c->rpc ? c->rpc : "call",
                         f->kind == K_ONLY_A ? "A" : "B", k->reset);
        if (f->a || f->b)
            tftap_buf_printf(b, " (%s)", f->a ? f->a : f->b);
        tftap_buf_putc(b, '\n');
        break;
    case K_STATUS:
        tftap_buf_printf(b, "    %s~%s status: %s -> %s\n", k->chg, k->reset, f->a ? f->a : "none",
                         f->b ? f->b : "none");
        break;
    case K_ACTION:
        tftap_buf_printf(b, "    %s~%s action: %s -> %s\n", k->chg, k->reset, f->a, f->b);
        break;
    case K_VALUE:
    case K_INPUT: {
        const char *m = !f->has_a ? "+" : !f->has_b ? "-" : "~";
        const char *col = !f->has_a ? k->add : !f->has_b ? k->del : k->chg;
        tftap_buf_printf(b, "    %s%s%s %s%s: ", col, m, k->reset, f->what ? f->what : "",
                         f->path ? f->path : "");
        put_value(b, f->a, f->has_a, f->src_a);
        tftap_buf_puts(b, " -> ");
        put_value(b, f->b, f->has_b, f->src_b);
        tftap_buf_putc(b, '\n');
        break;
    }
    case K_REPLACE:
        tftap_buf_printf(b, "    %s%s%s requires_replace %s\n", f->has_b ? k->add : k->del,
                         f->has_b ? "+" : "-", k->reset, f->path ? f->path : "");
        break;
    case K_DIAG:
        if (f->has_a && f->has_b) {
            tftap_buf_printf(b, "    %s~%s diagnostic detail changed: ", k->chg, k->reset);
            put_diag(b, f->b);
        } else {
            tftap_buf_printf(b, "    %s%s%s ", f->has_b ? k->add : k->del, f->has_b ? "+" : "-",
                             k->reset);
            put_diag(b, f->has_b ? f->b : f->a);
        }
        tftap_buf_putc(b, '\n');
        break;
    case K_PRIVATE:
        tftap_buf_printf(b, "    %s~%s private data: %.12s -> %.12s\n", k->chg, k->reset,
                         f->a ? f->a : "none", f->b ? f->b : "none");
        break;
    case K_DEFERRED:
        tftap_buf_printf(b, "    %s~%s deferred: %s -> %s\n", k->chg, k->reset, f->a ? f->a : "no",
                         f->b ? f->b : "no");
        break;
    case K_SCHEMAVER:
        tftap_buf_printf(b, "    %s~%s schema version: %s -> %s\n", k->chg, k->reset, f->a, f->b);
        break;
    case K_SCHEMA:
        /* The hashes are JSON strings: show their first 12 digits. */
        tftap_buf_printf(b,
                         "    %s~%s provider schema changed: %.12s -> %.12s (see tftap schema "
                         "diff)\n",
                         k->chg, k->reset, f->a && f->a[0] == '"' ? f->a + 1 : "?",
                         f->b && f->b[0] == '"' ? f->b + 1 : "?");
        break;
    }
}

static void render_text(const analysis_diff *d, int color, tftap_buf *b, int inputs)
{
    struct colors k = {"", "", "", "", ""};
    if (color)
        k = (struct colors){"\033[32m", "\033[31m", "\033[33m", "\033[2m", "\033[0m"};
    const char *group = NULL;
    for (size_t p = 0; p < d->npairs; p++) {
        const struct pair *pr = &d->pairs[p];
        int any = 0;
        for (size_t q = 0; q < pr->nfind; q++)
            any |= (d->f[pr->first + q].kind == K_INPUT) == inputs;
        if (!any)
            continue;
        const char *g = label(pr);
        if (!group || strcmp(group, g) != 0)
            tftap_buf_printf(b, "\n%s# %s%s\n", color ? "\033[1m" : "", g, k.reset);
        group = g;
        const analysis_diff_call *c = pr->a ? pr->a : pr->b;
        tftap_buf_printf(b, "  %s%s", k.dim, c->rpc ? c->rpc : "?");
        if (pr->a && pr->b)
            tftap_buf_printf(b, " (calls %lld, %lld)", (long long)pr->a->call_id,
                             (long long)pr->b->call_id);
        else
            tftap_buf_printf(b, " (call %lld)", (long long)c->call_id);
        tftap_buf_printf(b, "%s\n", k.reset);
        for (size_t q = 0; q < pr->nfind; q++) {
            const struct finding *f = &d->f[pr->first + q];
            if ((f->kind == K_INPUT) == inputs)
                text_finding(b, f, pr, &k);
        }
    }
}

static void json_src(tftap_buf *b, const char *key, const char *json, int has, enum src s,
                     int with_src)
{
    tftap_buf_printf(b, ",\"%s\":", key);
    if (!has) {
        tftap_buf_puts(b, "null");
        return;
    }
    if (with_src)
        tftap_buf_printf(b, "{\"source\":\"%s\",\"value\":%s}", src_names[s], json ? json : "null");
    else
        tftap_buf_puts(b, json ? json : "null");
}

static void json_str_or_null(tftap_buf *b, const char *s)
{
    if (s)
        tftap_buf_json_string(b, s, strlen(s));
    else
        tftap_buf_puts(b, "null");
}

static void render_json(const analysis_diff *d, int flags, tftap_buf *b)
{
    int no_inputs = flags & ANALYSIS_DIFF_NO_INPUTS;
    tftap_buf_printf(b, "{\"same\":%s,\"differences\":%zu,\"input_differences\":%zu,",
                     d->behaviour ? "false" : "true", d->behaviour, d->inputs);
    if (flags & ANALYSIS_DIFF_SECRETS_APART)
        tftap_buf_puts(b, "\"secrets_comparable\":false,");
    analysis_diff_meta_json(&d->meta, b);
    tftap_buf_puts(b, "\"changes\":[");
    int n = 0;
    for (size_t p = 0; p < d->npairs; p++) {
        const struct pair *pr = &d->pairs[p];
        for (size_t q = 0; q < pr->nfind; q++) {
            const struct finding *f = &d->f[pr->first + q];
            const analysis_diff_call *c = pr->a ? pr->a : pr->b;
            if (no_inputs && f->kind == K_INPUT)
                continue;
            tftap_buf_puts(b, n++ ? ",\n  " : "\n  ");
            tftap_buf_printf(b,
                             "{\"kind\":\"%s\",\"behaviour\":%s,\"address\":", kind_names[f->kind],
                             f->kind == K_INPUT ? "false" : "true");
            json_str_or_null(b, c->address);
            tftap_buf_puts(b, ",\"type\":");
            json_str_or_null(b, c->type_name);
            tftap_buf_puts(b, ",\"provider\":");
            json_str_or_null(b, c->provider);
            tftap_buf_puts(b, ",\"method\":");
            json_str_or_null(b, c->rpc);
            tftap_buf_puts(b, ",\"call_a\":");
            if (pr->a)
                tftap_buf_printf(b, "%lld", (long long)pr->a->call_id);
            else
                tftap_buf_puts(b, "null");
            tftap_buf_puts(b, ",\"call_b\":");
            if (pr->b)
                tftap_buf_printf(b, "%lld", (long long)pr->b->call_id);
            else
                tftap_buf_puts(b, "null");
            tftap_buf_puts(b, ",\"path\":");
            json_str_or_null(b, f->path);
            if (f->what) {
                tftap_buf_puts(b, ",\"value\":");
                json_str_or_null(b, f->what);
            }
            int vals = f->kind == K_VALUE || f->kind == K_INPUT;
            int raw = vals || f->kind == K_DIAG || f->kind == K_DEFERRED || f->kind == K_SCHEMA;
            if (f->kind == K_REPLACE) {
                tftap_buf_printf(b, ",\"change\":\"%s\"", f->has_b ? "added" : "removed");
            } else if (f->kind == K_DIAG) {
                tftap_buf_printf(b, ",\"change\":\"%s\"",
                                 f->has_a && f->has_b ? "changed"
                                 : f->has_b           ? "added"
                                                      : "removed");
            }
            if (raw) {
                json_src(b, "a", f->a, f->has_a, f->src_a, vals);
                json_src(b, "b", f->b, f->has_b, f->src_b, vals);
            } else if (f->kind != K_REPLACE) {
                tftap_buf_puts(b, ",\"a\":");
                json_str_or_null(b, f->a);
                tftap_buf_puts(b, ",\"b\":");
                json_str_or_null(b, f->b);
            }
            tftap_buf_putc(b, '}');
        }
    }
    tftap_buf_puts(b, n ? "\n]}\n" : "]}\n");
}

static void md_escape(tftap_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            tftap_buf_puts(b, "&lt;");
        else if (*s == '>')
            tftap_buf_puts(b, "&gt;");
        else if (*s == '&')
            tftap_buf_puts(b, "&amp;");
        else
            tftap_buf_putc(b, *s);
    }
}

/* The pairs [p, *end) reported under one label; their behaviour and input
 * findings counted. */
static void group_span(const analysis_diff *d, size_t p, size_t *end, size_t *beh, size_t *in)
{
    const char *g = label(&d->pairs[p]);
    size_t q = p;
    *beh = *in = 0;
    while (q < d->npairs && strcmp(label(&d->pairs[q]), g) == 0) {
        for (size_t r = 0; r < d->pairs[q].nfind; r++) {
            if (d->f[d->pairs[q].first + r].kind == K_INPUT)
                (*in)++;
            else
                (*beh)++;
        }
        q++;
    }
    *end = q;
}

static void render_markdown(const analysis_diff *d, size_t max_bytes, int no_inputs, tftap_buf *b)
{
    size_t groups = 0, shown = 0;
    for (size_t p = 0, q, beh, in; p < d->npairs; p = q) {
        group_span(d, p, &q, &beh, &in);
        groups += beh || (in && !no_inputs);
    }
    tftap_buf_puts(b, "### tftap diff\n\n");
    analysis_diff_meta_markdown(&d->meta, b);
    if (!d->behaviour)
        tftap_buf_puts(b, "**The provider behaved the same.**");
    else
        tftap_buf_printf(b, "**%zu behaviour difference%s**", d->behaviour,
                         d->behaviour == 1 ? "" : "s");
    if (d->inputs)
        tftap_buf_printf(b, " (%zu input difference%s: config or prior state, not behaviour)",
                         d->inputs, d->inputs == 1 ? "" : "s");
    tftap_buf_puts(b, "\n\n");
    tftap_buf one = TFTAP_BUF_INIT, body = TFTAP_BUF_INIT;
    size_t p = 0;
    const size_t tail_room = 200;
    while (p < d->npairs) {
        const char *g = label(&d->pairs[p]);
        size_t q, beh, in;
        group_span(d, p, &q, &beh, &in);
        if (!beh && (!in || no_inputs)) {
            p = q;
            continue;
        }
        size_t nf = beh + (no_inputs ? 0 : in);
        tftap_buf_reset(&one);
        tftap_buf_reset(&body);
        tftap_buf_puts(&one, "<details><summary><code>");
        md_escape(&one, g);
        tftap_buf_printf(&one, "</code>: %zu difference%s", beh, beh == 1 ? "" : "s");
        if (nf > beh)
            tftap_buf_printf(&one, ", %zu input%s", nf - beh, nf - beh == 1 ? "" : "s");
        tftap_buf_puts(&one, "</summary>\n\n```diff\n");
        struct colors k = {"", "", "", "", ""};
        for (size_t r = p; r < q; r++) {
            const struct pair *pr = &d->pairs[r];
            const analysis_diff_call *c = pr->a ? pr->a : pr->b;
            size_t shown_here = 0;
            for (size_t s = 0; s < pr->nfind; s++)
                shown_here += !(no_inputs && d->f[pr->first + s].kind == K_INPUT);
            if (!shown_here)
                continue;
            tftap_buf_printf(&body, "  %s\n", c->rpc ? c->rpc : "?");
            for (size_t s = 0; s < pr->nfind; s++)
                if (!(no_inputs && d->f[pr->first + s].kind == K_INPUT))
                    text_finding(&body, &d->f[pr->first + s], pr, &k);
        }
        /* In a ```diff block a line's first character colours it. */
        for (const char *s = tftap_buf_cstr(&body); *s;) {
            const char *e = strchr(s, '\n');
            size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
            const char *t = s;
            while (t < s + n && *t == ' ')
                t++;
            if (t < s + n && (*t == '+' || *t == '-' || *t == '~')) {
                tftap_buf_putc(&one, *t == '~' ? '!' : *t);
                tftap_buf_append(&one, s + 1, n - 1);
            } else {
                tftap_buf_append(&one, s, n);
            }
            s += n;
        }
        tftap_buf_puts(&one, "```\n</details>\n");
        if (max_bytes && b->len + one.len + tail_room > max_bytes)
            break;
        tftap_buf_append(b, one.data, one.len);
        shown++;
        p = q;
    }
    if (shown < groups)
        tftap_buf_printf(b,
                         "\n_%zu more address%s with differences not shown (length cap); run "
                         "`tftap diff` for all._\n",
                         groups - shown, groups - shown == 1 ? "" : "es");
    if (tftap_buf_failed(&one) || tftap_buf_failed(&body))
        b->failed = 1;
    tftap_buf_done(&one);
    tftap_buf_done(&body);
}

int analysis_diff_render(const analysis_diff *d, enum analysis_diff_format fmt, int flags,
                         size_t max_bytes, tftap_buf *out)
{
    switch (fmt) {
    case ANALYSIS_DIFF_JSON:
        render_json(d, flags, out);
        break;
    case ANALYSIS_DIFF_MARKDOWN:
        render_markdown(d, max_bytes, flags & ANALYSIS_DIFF_NO_INPUTS, out);
        break;
    case ANALYSIS_DIFF_TEXT: {
        int color = flags & ANALYSIS_DIFF_COLOR;
        analysis_diff_meta_text(&d->meta, out);
        if (d->behaviour) {
            tftap_buf_puts(out, "\nBehaviour differences (A -> B):\n");
            render_text(d, color, out, 0);
        }
        if (d->inputs && !(flags & ANALYSIS_DIFF_NO_INPUTS)) {
            tftap_buf_puts(out, "\nInput differences (config, prior state: not behaviour):\n");
            render_text(d, color, out, 1);
        }
        tftap_buf_printf(out, "\n%s: %zu behaviour difference%s, %zu input difference%s.\n",
                         d->behaviour ? "Provider behaviour differs" : "Provider behaved the same",
                         d->behaviour, d->behaviour == 1 ? "" : "s", d->inputs,
                         d->inputs == 1 ? "" : "s");
        break;
    }
    }
    return tftap_buf_failed(out) ? TFTAP_ENOMEM : 0;
}
