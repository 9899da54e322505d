/* analysis: the run diff's pairing of calls, which call of run A is
 * compared with which of run B (diff.c compares each pair). Runs of the
 * same configuration make the same calls, but not in the same order, not
 * always with the same names, and not always the same number of them, so
 * calls are paired by what they are about rather than by position:
 *
 * - By key: provider, method, type and address. The provider is taken
 *   without the public registries' host names, so that a run of Terraform
 *   pairs with one of OpenTofu. Calls of one key pair in call order.
 * - Unnamed calls of one key (no address) first pair with the other run's
 *   call that asked the same (equal request digests), the rest in call order:
 *   parallel walks make the calls of one type come in any order, and by
 *   order alone one instance's call would pair with another's and the
 *   difference between two instances would read as one between the runs.
 * - The create half of a replacement (a plan with no prior state after a
 *   replacing plan of the same address) pairs only with its like; one that
 *   only one run made is left out, as it follows from the action change
 *   reported with the first half.
 * - Calls one run named and the other did not (a plan not saved to a file
 *   names no new object) pair by everything but the address, in call
 *   order, a named call only with an unnamed one.
 *
 * What is left unpaired is a call only one run made. */
#include <stdlib.h>
#include <string.h>

#include "analysis/diff_int.h"

/* ---- keys ------------------------------------------------------------------------ */

static void key_part(tftap_buf *b, const char *s)
{
    tftap_buf_puts(b, s ? s : "");
    tftap_buf_putc(b, '\x1f');
}

/* A provider address without the public registries' host names, so that
 * a run of Terraform pairs with one of OpenTofu (hashicorp/aws is
 * registry.terraform.io/hashicorp/aws to one, registry.opentofu.org/... to
 * the other). */
static const char *provider_key(const char *p)
{
    static const char *const hosts[] = {"registry.terraform.io/", "registry.opentofu.org/"};
    for (size_t i = 0; p && i < sizeof hosts / sizeof hosts[0]; i++)
        if (strncmp(p, hosts[i], strlen(hosts[i])) == 0)
            return p + strlen(hosts[i]);
    return p;
}

static int plan_cmp(const void *x, const void *y)
{
    const struct dcall *const *a = x, *const *b = y;
    int c = strcmp((*a)->c->address, (*b)->c->address);
    if (c)
        return c;
    return (*a)->idx < (*b)->idx ? -1 : (*a)->idx > (*b)->idx;
}

/* Mark one run's create halves and set its calls' keys (key: provider,
 * method, create half or not, type, address; rkey: provider, method,
 * type). */
static int key_calls(struct dcall *v, size_t k)
{
    tftap_buf key = TFTAP_BUF_INIT;
    int rc = 0;
    /* The create half of a replacement (a plan with no prior state after a
     * replacing plan of the same address) pairs only with its like: that a
     * run has one follows from the action, reported with the first half.
     * Plans sorted by address, then call order, put each one right after
     * the earlier plans of its address. */
    struct dcall **plans = malloc((k + 1) * sizeof *plans);
    size_t np = 0;
    if (!plans)
        rc = TFTAP_ENOMEM;
    for (size_t i = 0; i < k && !rc; i++)
        if (diff_rpc_is(v[i].c, "PlanResourceChange") && v[i].c->address)
            plans[np++] = &v[i];
    if (!rc) {
        qsort(plans, np, sizeof *plans, plan_cmp);
        const struct dcall *last = NULL; /* the address's latest replacing-or-not plan */
        for (size_t i = 0; i < np; i++) {
            struct dcall *x = plans[i];
            if (last && strcmp(last->c->address, x->c->address) != 0)
                last = NULL;
            if (last && x->prior_null) {
                const char *act = last->action;
                if (act && strcmp(act, "replace") == 0) {
                    x->create_half = 1;
                    continue;
                }
            }
            last = x;
        }
    }
    free(plans);
    for (size_t i = 0; i < k && !rc; i++) {
        tftap_buf_reset(&key);
        key_part(&key, provider_key(v[i].c->provider));
        key_part(&key, v[i].c->rpc);
        key_part(&key, v[i].create_half ? "create-half" : "");
        key_part(&key, v[i].c->type_name);
        key_part(&key, v[i].c->address);
        tftap_buf_cstr(&key);
        if (tftap_buf_failed(&key) || !(v[i].key = strdup(key.data)))
            rc = TFTAP_ENOMEM;
        tftap_buf_reset(&key);
        key_part(&key, provider_key(v[i].c->provider));
        key_part(&key, v[i].c->rpc);
        key_part(&key, v[i].c->type_name);
        tftap_buf_cstr(&key);
        if (!rc && (tftap_buf_failed(&key) || !(v[i].rkey = strdup(key.data))))
            rc = TFTAP_ENOMEM;
    }
    tftap_buf_done(&key);
    return rc;
}

static int dcall_cmp(const void *x, const void *y)
{
    const struct dcall *const *a = x, *const *b = y;
    int c = strcmp((*a)->key, (*b)->key);
    if (c)
        return c;
    return (*a)->idx < (*b)->idx ? -1 : (*a)->idx > (*b)->idx;
}

/* ---- unnamed calls ------------------------------------------------------------ */

/* Positions of one run's calls, ordered by request digest, then call
 * order (qsort_r's context: the calls). */
static int digest_cmp(const void *x, const void *y, void *ctx)
{
    struct dcall *const *calls = ctx;
    const struct dcall *a = calls[*(const size_t *)x], *b = calls[*(const size_t *)y];
    if (a->req_digest != b->req_digest)
        return a->req_digest < b->req_digest ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Unnamed calls of one key in both runs (a, na and b, nb, each in call
 * order), paired into pa/pb from slot *n on: a call first with the
 * other run's earliest call left that asked the same (equal request
 * digests), the rest in call order. Parallel walks make the calls of one
 * type come in any order (the UpgradeResourceState of each instance
 * before a plan, say): by order alone they would pair one instance's call
 * with another's, and report the difference between two instances as one
 * between the runs. */
static int pair_unnamed_alike(struct dcall **a, size_t na, struct dcall **b, size_t nb,
                              struct dcall **pa, struct dcall **pb, size_t *n)
{
    size_t *byd = malloc((nb + 1) * sizeof *byd);  /* positions in b, by digest */
    size_t *taken = calloc(nb + 1, sizeof *taken); /* per a digest's first index in byd */
    unsigned char *used_b = calloc(nb + 1, 1);
    struct dcall **mate = calloc(na + 1, sizeof *mate);
    if (!byd || !taken || !used_b || !mate) {
        free(byd);
        free(taken);
        free(used_b);
        free(mate);
        return TFTAP_ENOMEM;
    }
    for (size_t j = 0; j < nb; j++)
        byd[j] = j;
    qsort_r(byd, nb, sizeof *byd, digest_cmp, b);
    for (size_t i = 0; i < na; i++) {
        uint64_t want = a[i]->req_digest;
        size_t lo = 0, hi = nb; /* the first with a digest >= want */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (b[byd[mid]]->req_digest < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t j = lo + taken[lo]; /* those of the digest taken come first */
        if (j < nb && b[byd[j]]->req_digest == want) {
            taken[lo]++;
            mate[i] = b[byd[j]];
            used_b[byd[j]] = 1;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < na; i++) {
        if (mate[i])
            continue;
        while (k < nb && used_b[k])
            k++;
        if (k < nb) {
            mate[i] = b[k];
            used_b[k++] = 1;
        }
    }
    size_t m = *n;
    for (size_t i = 0; i < na; i++, m++) {
        pa[m - *n] = a[i];
        pb[m - *n] = mate[i];
    }
    for (size_t j = 0; j < nb; j++)
        if (!used_b[j]) {
            pa[m - *n] = NULL;
            pb[m - *n] = b[j];
            m++;
        }
    *n = m;
    free(byd);
    free(taken);
    free(used_b);
    free(mate);
    return 0;
}

struct single {
    struct dcall *x;
    size_t slot; /* its pair, one-sided */
};

static int single_cmp(const void *p, const void *q)
{
    const struct single *a = p, *b = q;
    int c = strcmp(a->x->rkey, b->x->rkey);
    if (c)
        return c;
    return a->x->idx < b->x->idx ? -1 : a->x->idx > b->x->idx;
}

/* Pairs (pa[p], pb[p]) of which one side is empty, the other's call named
 * in one run and not in the other: a named call pairs with an unnamed one
 * of the same provider, method and type (a create half or not: an unnamed
 * one is not known as one), in call order (first the
 * unnamed of run A with the named of run B, then the named of A with the
 * unnamed of B). Merged pairs leave one of their slots empty (both NULL),
 * which are dropped. */
static int pair_unnamed(struct dcall **pa, struct dcall **pb, size_t *n)
{
    struct single *sa = malloc((*n + 1) * sizeof *sa), *sb = malloc((*n + 1) * sizeof *sb);
    size_t na = 0, nb = 0;
    if (!sa || !sb) {
        free(sa);
        free(sb);
        return TFTAP_ENOMEM;
    }
    for (size_t p = 0; p < *n; p++) {
        if (pa[p] && !pb[p])
            sa[na++] = (struct single){pa[p], p};
        else if (pb[p] && !pa[p])
            sb[nb++] = (struct single){pb[p], p};
    }
    qsort(sa, na, sizeof *sa, single_cmp);
    qsort(sb, nb, sizeof *sb, single_cmp);
    for (size_t i = 0, k = 0; i < na && k < nb;) {
        int c = strcmp(sa[i].x->rkey, sb[k].x->rkey);
        if (c) {
            if (c < 0)
                i++;
            else
                k++;
            continue;
        }
        size_t ie = i, ke = k; /* the group: [i, ie) and [k, ke) */
        while (ie < na && strcmp(sa[ie].x->rkey, sa[i].x->rkey) == 0)
            ie++;
        while (ke < nb && strcmp(sb[ke].x->rkey, sb[k].x->rkey) == 0)
            ke++;
        for (int round = 0; round < 2; round++) {
            /* round 0: A unnamed with B named; round 1: A named with B
             * unnamed. */
            size_t x = i, y = k;
            for (;;) {
                while (x < ie && (!pa[sa[x].slot] || !sa[x].x->c->address != !round))
                    x++;
                while (y < ke && (!pb[sb[y].slot] || !sb[y].x->c->address != !!round))
                    y++;
                if (x == ie || y == ke)
                    break;
                /* B's call joins A's pair; its own slot empties. */
                pb[sa[x].slot] = sb[y].x;
                pa[sb[y].slot] = NULL;
                pb[sb[y].slot] = NULL;
                x++;
                y++;
            }
        }
        i = ie;
        k = ke;
    }
    size_t w = 0;
    for (size_t p = 0; p < *n; p++)
        if (pa[p] || pb[p]) {
            pa[w] = pa[p];
            pb[w] = pb[p];
            w++;
        }
    *n = w;
    free(sa);
    free(sb);
    return 0;
}

/* ---- the pairs --------------------------------------------------------------------- */

/* What a call is reported under: its address, else its type, else its
 * provider (label() says the same). */
static const char *group_of(const analysis_diff_call *c)
{
    if (c->address)
        return c->address;
    if (c->type_name)
        return c->type_name;
    return c->provider ? c->provider : "";
}

int diff_pair_calls(analysis_diff *d, struct dcall ***pa_out, struct dcall ***pb_out)
{
    *pa_out = *pb_out = NULL;
    struct dcall **sa = NULL, **sb = NULL, **pa = NULL, **pb = NULL;
    int rc = key_calls(d->ca, d->na);
    if (!rc)
        rc = key_calls(d->cb, d->nb);
    if (rc)
        return rc;
    sa = malloc((d->na + 1) * sizeof *sa);
    sb = malloc((d->nb + 1) * sizeof *sb);
    d->pairs = malloc((d->na + d->nb + 1) * sizeof *d->pairs);
    if (!sa || !sb || !d->pairs) {
        rc = TFTAP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < d->na; i++)
        sa[i] = &d->ca[i];
    for (size_t i = 0; i < d->nb; i++)
        sb[i] = &d->cb[i];
    qsort(sa, d->na, sizeof *sa, dcall_cmp);
    qsort(sb, d->nb, sizeof *sb, dcall_cmp);
    /* Merge the two sorted lists: equal keys pair in order. Pairs keep the
     * dcalls through parallel arrays so comparing needs no lookups. */
    pa = malloc((d->na + d->nb + 1) * sizeof *pa);
    pb = malloc((d->na + d->nb + 1) * sizeof *pb);
    if (!pa || !pb) {
        rc = TFTAP_ENOMEM;
        goto out;
    }
    size_t i = 0, k = 0, n = 0;
    while (i < d->na || k < d->nb) {
        int c = i == d->na ? 1 : k == d->nb ? -1 : strcmp(sa[i]->key, sb[k]->key);
        if (c == 0 && sa[i]->c->address == NULL) {
            size_t i2 = i, k2 = k;
            while (i2 < d->na && strcmp(sa[i2]->key, sa[i]->key) == 0)
                i2++;
            while (k2 < d->nb && strcmp(sb[k2]->key, sb[k]->key) == 0)
                k2++;
            if ((rc = pair_unnamed_alike(sa + i, i2 - i, sb + k, k2 - k, pa + n, pb + n, &n)) != 0)
                goto out;
            i = i2;
            k = k2;
            continue;
        }
        pa[n] = c <= 0 ? sa[i++] : NULL;
        pb[n] = c >= 0 ? sb[k++] : NULL;
        n++;
    }
    /* Calls one run named and the other did not (a plan not saved to a
     * file names no new object): paired by everything but the address, in
     * call order, a named call only with an unnamed one. */
    if ((rc = pair_unnamed(pa, pb, &n)) != 0)
        goto out;
    size_t kept = 0;
    for (size_t p = 0; p < n; p++) {
        struct dcall *x = pa[p], *y = pb[p];
        /* A create half nobody else has follows from the action change. */
        if ((!x || !y) && (x ? x : y)->create_half)
            continue;
        const analysis_diff_call *named = x && x->c->address ? x->c : y ? y->c : x->c;
        d->pairs[kept] = (struct pair){x ? x->c : NULL,
                                       y ? y->c : NULL,
                                       x ? x->idx : 0,
                                       y ? y->idx : 0,
                                       group_of(named),
                                       0,
                                       0};
        pa[kept] = x;
        pb[kept] = y;
        kept++;
    }
    d->npairs = kept;
    *pa_out = pa;
    *pb_out = pb;
    pa = pb = NULL;
out:
    free(pa);
    free(pb);
    free(sa);
    free(sb);
    return rc;
}
