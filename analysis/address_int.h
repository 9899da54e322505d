/* analysis: what address matching knows of each resource instance, shared
 * by its three parts: reading the documents (address_docs.c: a saved
 * plan's JSON, states, the configuration's blocks), scoring a call against
 * the instances of its type (address_score.c) and matching calls to the
 * instances they name (address.c). Private to analysis/.
 *
 * Ownership: a struct instances owns its instances' addresses and its
 * arrays; the values it points at live in the parsed documents, which
 * must outlive it; am_instances_free() frees what it owns. A struct index
 * owns its arrays and points into the instances it was built from, which
 * must outlive it; address_index_free() frees what it owns. */
#ifndef TFTAP_ANALYSIS_ADDRESS_INT_H
#define TFTAP_ANALYSIS_ADDRESS_INT_H

#include <stddef.h>

#include "common/common.h"
#include "store/store.h"

/* What is known of an instance, by when it was so. */
enum moment {
    MO_B0, /* the state the run started from (`CLI state pull`) */
    MO_BR, /* a saved plan's prior state: the objects as refreshed */
    MO_AP, /* a saved plan's planned values */
    MO_AS, /* the state the run left */
    MO_N
};
/* Values per moment: a plan's change and its prior state say the same
 * object twice; a deposed object is one more. */
#define MAX_PER 3
/* Values per side of the index (before: B0 and BR; after: AP and AS). */
#define MAX_VALS (2 * MAX_PER)

struct instance {
    char *address; /* owned */
    const char *type;
    int data;  /* a data source (mode "data") */
    int group; /* the document group it was read from (analysis_match_doc) */
    const sj_node *val[MO_N][MAX_PER];
    const sj_node *unk[MO_N][MAX_PER]; /* a plan's after_unknown for its after */
    unsigned nval[MO_N];
};

struct instances {
    struct instance *v;
    size_t n, cap;
    size_t *slots;  /* open addressing by address and mode: instance + 1, 0 empty */
    size_t nslots;  /* a power of two, at least twice n */
    int have_after; /* some document names objects as the run left them */
    int group;      /* the group of the document being read */
    int grouped;    /* some document is of a group (`tofu test` run blocks) */
    int ngroups;    /* the highest group */
    int partial;    /* the state after is one a failed command left (1), or a
                     * refresh's (2: it applied nothing it planned) */
    /* The configuration's resource blocks ("tftap_config"), when read. */
    struct config_block {
        const char *address, *type; /* in their document */
        int data, certain;
    } * blocks;
    size_t nblocks;
    int have_config;
    /* Every object of the run is one of the configuration's blocks (a
     * `test`: its states start from nothing): a certain block names every
     * call of its type, not only those of new objects. */
    int config_whole;
    /* The root module's import blocks with literal targets and ids
     * ("tftap_imports" of the configuration's document), and the objects
     * their imports returned, copied (owned: freed with is). */
    const sj_node *imports;
    sj_doc **owned;
    size_t nowned;
};

/* Keep v as known of in at moment m (nothing for NULL, a null, a value
 * said already, or when MAX_PER are kept); unk: a plan's after_unknown. */
void am_push_val(struct instance *in, int m, const sj_node *v, const sj_node *unk);

/* The instance of (address, data) read from documents of group, or
 * (size_t)-1. */
size_t am_instance_find(const struct instances *is, const char *address, int data, int group);

/* Add what one document says (a saved plan's or a state's `show -json`, a
 * raw state, the configuration's blocks as "tftap_config") to is. after:
 * its state is the one the run left; partial: that of a failed command.
 * 0, TFTAP_EDECODE (not an object) or TFTAP_ENOMEM. */
int am_instances_collect(struct instances *is, const sj_node *root, int after, int partial,
                         const char *targets);

/* The address the configuration makes certain for a new object of type
 * (data: a data source): the type's only block, itself and its modules
 * called once; NULL when there is none. Points into the document. */
const char *am_config_address(const struct instances *is, const char *type, int data);

/* 1 when address is a block of the configuration certain to have that
 * one instance. */
int am_config_certain(const struct instances *is, const char *address);

/* What the run's ImportResourceState calls returned for the import blocks
 * of the configuration: an import block (type, id) that one block alone
 * has, whose calls returned one object, makes that object what was known
 * of its target before the run (MO_B0): the read of it, and the plans and
 * applies of what that read returned, are then about the target. 0,
 * TFTAP_ESTORE or TFTAP_ENOMEM. */
int am_instances_imports(struct instances *is, store *s, int64_t run_id);

void am_instances_free(struct instances *is);

/* ---- Scoring a call against instances (address_score.c) ---- */

/* A call's values, as the store hands them (store_match_call). */
enum { K_PRIOR, K_PROPOSED, K_CONFIG, K_PLANNED, K_NEW, K_N };
/* An upgrade (UpgradeResourceState) is held against instances as a read
 * is by its current state: what it upgraded to is the object before the
 * run, once refreshed the prior state of what follows. A kind of its own:
 * an instance's upgrade and read, in one process, are two calls about it. */
enum { R_PLAN, R_APPLY, R_READ, R_DATA, R_UPGRADE };

/* What one call says: its kind and its values. */
struct call_vals {
    int rpc;
    int replace;           /* a plan that requires replacement: its planned state may
                            * keep values of the object replaced */
    int loose;             /* what it planned or applied need not be what the state
                            * after holds: error diagnostics, a legacy provider (core
                            * tolerates its inconsistencies), or a command that failed */
    int partial;           /* the state after is a failed command's */
    const sj_node *v[K_N]; /* NULL where the call has none */
};

/* The instances of one type and mode in the index, by side. */
struct group;
/* An id one of an instance's values carries, in the index. */
struct id_ref;

/* The instances by type and mode, and by the ids their values carry, so
 * that a call is scored against the few its values could agree with. */
struct index {
    struct group *groups; /* sorted by type and mode */
    size_t ngroups;
    size_t *pool;          /* the groups' lists */
    struct id_ref *ids[2]; /* per side, sorted by type, mode, id */
    size_t nids[2];
    size_t *stamp; /* per instance: the last call (1-based) it was scored for */
};

/* A call's values held against each side of the index (0: values from
 * before the run, B0 and BR; 1: planned or left, AP and AS): the kinds
 * scoring compares with a moment of that side. */
struct call_sides {
    const sj_node *v[2][K_N];
    size_t n[2];
};

/* The instances the call agrees with (none ruled out, something agreed)
 * with the fewest disagreements. */
struct ranking {
    long best_score; /* agreeing leaves of the first of them */
    long fewest;     /* their disagreements */
    size_t ties;     /* how many */
    size_t *tied;    /* which, up to MAX_TIED */
};
/* Calls agreeing with more instances than this stay unnamed. */
#define MAX_TIED 4096

/* 1 when n says nothing a call can be held to: absent (NULL), a null, or
 * opaque (unknown, sensitive: a hash only, or not decoded). */
int address_value_absent_or_opaque(const sj_node *n);

/* The value of a dynamic value as the decoder writes it ({"type": T,
 * "value": V}), or NULL when n is not one. */
const sj_node *address_dynamic_value(const sj_node *n);

/* The member of an object by key, or NULL. */
const sj_node *address_object_member(const sj_node *obj, const char *key, size_t key_len);

/* Element i of an array, or NULL. */
const sj_node *address_array_element(const sj_node *arr, size_t i);

/* 1 when a call's value of kind k (K_*) is a whole object (prior, planned,
 * new): its nulls disagree with values. A configuration is not: its nulls
 * say nothing of computed attributes. */
int address_kind_is_whole_object(int k);

/* Is what an earlier run read of a data source instance (the state
 * before, moment m) beside the point: a document after the run (a saved
 * plan's prior state, the state after) holds what this run read of it?
 * The instances a read agrees with are then told apart by that alone: two
 * instances reading the same now are equal, whatever they read before. */
int address_earlier_read_superseded(const struct call_vals *c, const struct instance *in, int m);

/* Build the index of is into ix (which need not be initialised). 0 or
 * TFTAP_ENOMEM (ix is then empty). */
int address_index_build(struct index *ix, const struct instances *is);

/* Free what ix owns and empty it; a zeroed ix is fine. */
void address_index_free(struct index *ix);

/* The group of type and mode (data: data sources) in ix, or NULL when is
 * has no instance of them. */
const struct group *address_index_group(const struct index *ix, const char *type, int data);

/* Which of c's values are held against each side of the index, into cs. */
void address_call_sides_fill(const struct call_vals *c, struct call_sides *cs);

/* How many instances of g scoring can compare c with at all (the others it
 * cannot pair with the call): what the call has against what they have. */
size_t address_comparable_count(const struct group *g, const struct call_sides *cs);

/* Score c against the instances of g whose values on one side may agree
 * with the call's values vals (those compared with that side): with every
 * one of those carrying an id, the instances holding one of the ids there
 * and those with a value there without one; otherwise all with a value
 * there. Every other pairing disagrees on "id". Each instance is scored
 * once per seq (the call's number, from 1); those the call agrees with
 * are added to r, whose tied holds MAX_TIED. */
void address_score_side(const struct instances *is, struct index *ix, size_t seq,
                        const struct group *g, int side, const struct call_vals *c,
                        const sj_node *const *vals, size_t nvals, struct ranking *r);

#endif
