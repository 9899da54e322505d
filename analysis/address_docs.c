/* analysis: the documents address matching reads (address_int.h), each
 * into what is known of an instance at one moment: `CLI show -json` of a
 * saved plan (its changes, prior state and planned values) or of a state,
 * a raw state (`CLI state pull`), and the configuration's resource blocks
 * as tftap run read them (whether a block is certain to have one
 * instance). secrets.c reads the same documents for what core marks. */
#include "analysis/analysis.h"
#include "analysis/analysis_int.h"
#include "analysis/address_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void am_push_val(struct instance *in, int m, const sj_node *v, const sj_node *unk)
{
    if (m < 0 || !v || v->kind == SJ_NULL || in->nval[m] >= MAX_PER)
        return;
    for (unsigned j = 0; j < in->nval[m]; j++)
        if (sj_equal(in->val[m][j], v))
            return; /* said twice: a plan's change and its prior state */
    in->val[m][in->nval[m]] = v;
    in->unk[m][in->nval[m]] = unk;
    in->nval[m]++;
}

static size_t address_hash(const char *address, size_t alen, int data, int group)
{
    uint64_t h = (1469598103934665603u ^ (uint64_t)data) + (uint64_t)group; /* FNV-1a */
    for (size_t i = 0; i < alen; i++)
        h = (h ^ (unsigned char)address[i]) * 1099511628211u;
    return (size_t)h;
}

/* The slot of (address, data, group): its instance, or the empty slot for
 * it. */
static size_t *address_slot(const struct instances *is, const char *address, size_t alen, int data,
                            int group)
{
    size_t mask = is->nslots - 1;
    for (size_t k = address_hash(address, alen, data, group) & mask;; k = (k + 1) & mask) {
        size_t *slot = &is->slots[k];
        if (*slot == 0)
            return slot;
        const struct instance *in = &is->v[*slot - 1];
        if (in->data == data && in->group == group && strncmp(in->address, address, alen) == 0 &&
            in->address[alen] == '\0')
            return slot;
    }
}

size_t am_instance_find(const struct instances *is, const char *address, int data, int group)
{
    if (is->nslots == 0)
        return (size_t)-1;
    size_t slot = *address_slot(is, address, strlen(address), data, group);
    return slot ? slot - 1 : (size_t)-1;
}

static int slots_grow(struct instances *is)
{
    size_t nslots = is->nslots ? is->nslots * 2 : 64;
    size_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return TFTAP_ENOMEM;
    free(is->slots);
    is->slots = slots;
    is->nslots = nslots;
    for (size_t i = 0; i < is->n; i++) {
        const struct instance *in = &is->v[i];
        *address_slot(is, in->address, strlen(in->address), in->data, in->group) = i + 1;
    }
    return 0;
}

/* The instance of address (made when new), with v known of it at moment m
 * (-1: none). address is copied; values live in their document. */
static int add_instance(struct instances *is, const char *address, size_t alen, const char *type,
                        int data, int m, const sj_node *v, const sj_node *unk)
{
    struct instance *in = NULL;
    if (is->nslots < 2 * (is->n + 1) && slots_grow(is) != 0)
        return TFTAP_ENOMEM;
    size_t *slot = address_slot(is, address, alen, data, is->group);
    if (*slot)
        in = &is->v[*slot - 1]; /* the same instance seen in another section */
    if (!in) {
        if (is->n == is->cap) {
            size_t cap = is->cap ? is->cap * 2 : 32;
            struct instance *nv = realloc(is->v, cap * sizeof *nv);
            if (!nv)
                return TFTAP_ENOMEM;
            is->v = nv;
            is->cap = cap;
        }
        char *a = malloc(alen + 1);
        if (!a)
            return TFTAP_ENOMEM;
        memcpy(a, address, alen);
        a[alen] = '\0';
        in = &is->v[is->n++];
        *slot = is->n;
        memset(in, 0, sizeof *in);
        in->address = a;
        in->type = type;
        in->data = data;
        in->group = is->group;
    }
    am_push_val(in, m, v, unk);
    if ((m == MO_AP || m == MO_AS) && v && v->kind != SJ_NULL)
        is->have_after = 1;
    return 0;
}

static int str_is(const sj_node *n, const char *s)
{
    return n && n->kind == SJ_STRING && strcmp(n->str, s) == 0;
}

static int mode_of(const sj_node *r, int *data)
{
    const sj_node *m = sj_get(r, "mode");
    *data = str_is(m, "data");
    return str_is(m, "managed") || *data;
}

/* A module's resources in `show -json` form, known at moment m, then its
 * children. */
/* Is address one of targets' (one a line), an instance of one, or inside
 * a targeted module? NULL targets: everything is. */
static int targeted(const char *targets, const char *address, size_t alen)
{
    if (targets == NULL)
        return 1;
    for (const char *t = targets; *t;) {
        size_t n = strcspn(t, "\n");
        if (n > 0 && n <= alen && memcmp(address, t, n) == 0 &&
            (n == alen || address[n] == '[' || address[n] == '.'))
            return 1;
        t += n + (t[n] == '\n');
    }
    return 0;
}

static int collect_module(struct instances *is, const sj_node *mod, int m, const char *targets,
                          unsigned depth)
{
    if (!mod || depth > 64)
        return 0;
    const sj_node *res = sj_get(mod, "resources");
    if (res && res->kind == SJ_ARRAY) {
        for (const sj_node *r = res->child; r; r = r->next) {
            const sj_node *addr = sj_get(r, "address"), *type = sj_get(r, "type");
            int data;
            if (!mode_of(r, &data) || !addr || addr->kind != SJ_STRING || !type ||
                type->kind != SJ_STRING || !targeted(targets, addr->str, addr->len))
                continue;
            int rc = add_instance(is, addr->str, addr->len, type->str, data, m, sj_get(r, "values"),
                                  NULL);
            if (rc)
                return rc;
        }
    }
    const sj_node *kids = sj_get(mod, "child_modules");
    if (kids && kids->kind == SJ_ARRAY)
        for (const sj_node *k = kids->child; k; k = k->next) {
            int rc = collect_module(is, k, m, targets, depth + 1);
            if (rc)
                return rc;
        }
    return 0;
}

void analysis_raw_address(tftap_buf *a, const sj_node *module, int data, const sj_node *type,
                          const sj_node *name, const sj_node *key)
{
    if (module && module->kind == SJ_STRING && module->len)
        tftap_buf_printf(a, "%s.", module->str);
    tftap_buf_printf(a, "%s%s.%s", data ? "data." : "", type->str, name->str);
    if (key && key->kind == SJ_NUMBER) {
        tftap_buf_printf(a, "[%.*s]", (int)key->len, key->str);
    } else if (key && key->kind == SJ_STRING) {
        tftap_buf_putc(a, '[');
        tftap_buf_json_string(a, key->str, key->len);
        tftap_buf_putc(a, ']');
    }
}

/* A raw state (`CLI state pull`, format 4): resources with their instances'
 * attributes, known at moment m; addresses are put together as the CLI
 * writes them. */
static int collect_raw_state(struct instances *is, const sj_node *root, int m)
{
    const sj_node *res = sj_get(root, "resources");
    tftap_buf a = TFTAP_BUF_INIT;
    int rc = 0;
    if (!res || res->kind != SJ_ARRAY)
        return 0;
    for (const sj_node *r = res->child; r && !rc; r = r->next) {
        const sj_node *type = sj_get(r, "type"), *name = sj_get(r, "name"),
                      *module = sj_get(r, "module"), *insts = sj_get(r, "instances");
        int data;
        if (!mode_of(r, &data) || !type || type->kind != SJ_STRING || !name ||
            name->kind != SJ_STRING || !insts || insts->kind != SJ_ARRAY)
            continue;
        for (const sj_node *in = insts->child; in && !rc; in = in->next) {
            const sj_node *key = sj_get(in, "index_key"), *attrs = sj_get(in, "attributes");
            tftap_buf_reset(&a);
            analysis_raw_address(&a, module, data, type, name, key);
            if (tftap_buf_failed(&a)) {
                rc = TFTAP_ENOMEM;
                break;
            }
            rc = add_instance(is, a.data, a.len, type->str, data, m, attrs, NULL);
        }
    }
    tftap_buf_done(&a);
    return rc;
}

/* The configuration's resource blocks, as tftap run read them: each with
 * its address and whether that is certainly its only instance (no count
 * or for_each, in a module called once). */
static int collect_config(struct instances *is, const sj_node *cfg)
{
    struct config_block *v = realloc(is->blocks, (is->nblocks + cfg->n + 1) * sizeof *v);
    if (!v)
        return TFTAP_ENOMEM;
    is->blocks = v;
    is->have_config = 1;
    for (const sj_node *b = cfg->child; b; b = b->next) {
        const sj_node *addr = sj_get(b, "address"), *type = sj_get(b, "type"),
                      *certain = sj_get(b, "certain");
        int data;
        if (!mode_of(b, &data) || !addr || addr->kind != SJ_STRING || !type ||
            type->kind != SJ_STRING)
            continue;
        is->blocks[is->nblocks++] = (struct config_block){
            addr->str, type->str, data, certain && certain->kind == SJ_BOOL && certain->boolean};
    }
    return 0;
}

/* The address the configuration makes certain for a new object of type:
 * the type's only block, itself and its module called once. */
const char *am_config_address(const struct instances *is, const char *type, int data)
{
    const struct config_block *one = NULL;
    for (size_t i = 0; i < is->nblocks; i++) {
        const struct config_block *b = &is->blocks[i];
        if (b->data != data || strcmp(b->type, type) != 0)
            continue;
        if (one)
            return NULL; /* two blocks of the type */
        one = b;
    }
    return one && one->certain ? one->address : NULL;
}

/* Is address a block of the configuration certain to have that one
 * instance? */
int am_config_certain(const struct instances *is, const char *address)
{
    for (size_t i = 0; i < is->nblocks; i++)
        if (is->blocks[i].certain && strcmp(is->blocks[i].address, address) == 0)
            return 1;
    return 0;
}

/* One document, whichever of the forms it is. */
int am_instances_collect(struct instances *is, const sj_node *root, int after, int partial,
                         const char *targets)
{
    if (!root || root->kind != SJ_OBJECT)
        return TFTAP_EDECODE;
    if (after && partial > is->partial)
        is->partial = partial;
    const sj_node *cfg = sj_get(root, "tftap_config");
    if (cfg && cfg->kind == SJ_ARRAY) {
        const sj_node *whole = sj_get(root, "tftap_config_whole");
        if (whole && whole->kind == SJ_BOOL && whole->boolean)
            is->config_whole = 1;
        const sj_node *imports = sj_get(root, "tftap_imports");
        if (imports && imports->kind == SJ_ARRAY)
            is->imports = imports;
        return collect_config(is, cfg);
    }
    int state_moment = after ? MO_AS : MO_B0;
    if (!sj_get(root, "format_version") && sj_get(root, "resources"))
        return collect_raw_state(is, root, state_moment);
    /* A saved plan: its changes say before (as refreshed) and after
     * themselves; what is unknown after is left out of "after" and marked
     * in "after_unknown". */
    const sj_node *rcs = sj_get(root, "resource_changes");
    if (rcs && rcs->kind == SJ_ARRAY) {
        for (const sj_node *r = rcs->child; r; r = r->next) {
            const sj_node *addr = sj_get(r, "address"), *type = sj_get(r, "type"),
                          *ch = sj_get(r, "change");
            int data;
            if (!mode_of(r, &data) || !addr || addr->kind != SJ_STRING || !type ||
                type->kind != SJ_STRING)
                continue;
            int rc = add_instance(is, addr->str, addr->len, type->str, data, MO_BR,
                                  sj_get(ch, "before"), NULL);
            if (!rc)
                rc = add_instance(is, addr->str, addr->len, type->str, data, MO_AP,
                                  sj_get(ch, "after"), sj_get(ch, "after_unknown"));
            if (rc)
                return rc;
        }
    }
    /* The plan's prior state (data sources read while planning are there;
     * of a targeted plan, only the targets' are as it read them). */
    int rc =
        collect_module(is, sj_get(sj_get(sj_get(root, "prior_state"), "values"), "root_module"),
                       MO_BR, targets, 0);
    /* A state. */
    if (!rc)
        rc = collect_module(is, sj_get(sj_get(root, "values"), "root_module"), state_moment, NULL,
                            0);
    return rc;
}

/* One import block as the configuration's document says it. */
struct import_block {
    const char *address, *type, *id;
    size_t alen;
    const sj_node *state; /* what its calls returned (owned by is), NULL: none yet */
    int bad;              /* another block asks the same, or its calls disagree */
};

struct importing {
    struct instances *is;
    struct import_block *v;
    size_t n;
    int err;
};

static int on_import(void *ctx, const store_import_call *c)
{
    struct importing *im = ctx;
    for (size_t i = 0; i < im->n; i++) {
        struct import_block *b = &im->v[i];
        if (b->bad || !c->type_name || !c->id || strcmp(b->type, c->type_name) != 0 ||
            strcmp(b->id, c->id) != 0)
            continue;
        if (!c->state || c->state->kind != SJ_OBJECT) {
            b->bad = 1; /* imported nothing, or several objects */
        } else if (b->state) {
            b->bad = !sj_equal(b->state, c->state);
        } else {
            /* The call's nodes live only until we return: a copy. */
            sj_doc **v = realloc(im->is->owned, (im->is->nowned + 1) * sizeof *v);
            if (!v)
                return im->err = TFTAP_ENOMEM;
            im->is->owned = v;
            tftap_buf text = TFTAP_BUF_INIT;
            sj_doc *d = NULL;
            sj_write(c->state, &text);
            int rc = tftap_buf_failed(&text)
                         ? TFTAP_ENOMEM
                         : sj_parse(text.data, text.len, TFTAP_JSON_MAX_DEPTH + 2, &d);
            tftap_buf_done(&text);
            if (rc == TFTAP_ENOMEM)
                return im->err = rc;
            if (rc) {
                b->bad = 1; /* too deep to keep */
                continue;
            }
            v[im->is->nowned++] = d;
            b->state = sj_root(d);
        }
    }
    return 0;
}

int am_instances_imports(struct instances *is, store *s, int64_t run_id)
{
    if (!is->imports || is->imports->n == 0)
        return 0;
    struct importing im = {is, calloc(is->imports->n, sizeof *im.v), 0, 0};
    if (!im.v)
        return TFTAP_ENOMEM;
    for (const sj_node *b = is->imports->child; b; b = b->next) {
        const sj_node *a = sj_get(b, "address"), *t = sj_get(b, "type"), *id = sj_get(b, "id");
        if (!a || a->kind != SJ_STRING || !t || t->kind != SJ_STRING || !id ||
            id->kind != SJ_STRING)
            continue;
        im.v[im.n++] = (struct import_block){a->str, t->str, id->str, a->len, NULL, 0};
    }
    /* Two blocks asking one id of one type, or importing to one address:
     * which call was whose cannot be told. */
    for (size_t i = 0; i < im.n; i++)
        for (size_t j = i + 1; j < im.n; j++)
            if ((strcmp(im.v[i].type, im.v[j].type) == 0 && strcmp(im.v[i].id, im.v[j].id) == 0) ||
                strcmp(im.v[i].address, im.v[j].address) == 0)
                im.v[i].bad = im.v[j].bad = 1;
    int rc = store_import_calls_each(s, run_id, on_import, &im);
    if (!rc)
        rc = im.err;
    for (size_t i = 0; !rc && i < im.n; i++)
        if (!im.v[i].bad && im.v[i].state)
            rc = add_instance(is, im.v[i].address, im.v[i].alen, im.v[i].type, 0, MO_B0,
                              im.v[i].state, NULL);
    free(im.v);
    return rc;
}

void am_instances_free(struct instances *is)
{
    for (size_t i = 0; i < is->nowned; i++)
        sj_free(is->owned[i]);
    free(is->owned);
    for (size_t i = 0; i < is->n; i++)
        free(is->v[i].address);
    free(is->v);
    free(is->slots);
    free(is->blocks);
}
