/* analysis: what address matching knows of each resource instance, shared
 * by its two halves: reading the documents (address_docs.c: a saved plan's
 * JSON, states, the configuration's blocks) and matching calls to the
 * instances they name (address.c). Private to analysis/.
 *
 * Ownership: a struct instances owns its instances' addresses and its
 * arrays; the values it points at live in the parsed documents, which
 * must outlive it; am_instances_free() frees what it owns. */
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

#endif
