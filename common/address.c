/* common: resource addresses as filters. A filter names a resource type,
 * or an address whose every step ("module.m", "tftest5_pet.x") matches the
 * address's step there, its key too when the filter gives one: "module.m"
 * keeps every instance of module m and all within, "module.m[0]" one of
 * them, "module.m.tftest5_pet.x" that resource in every instance of m,
 * "tftest5_pet.x" its root instances (not those of a module). */
#include "common/common.h"

#include <string.h>

/* One step of an address at *p: its name and its key ("[0]", "[\"k\"]",
 * brackets included; empty when none). Returns 0 when *p holds no well
 * formed step. */
static int step(const char **p, const char **name, size_t *nlen, const char **key, size_t *klen)
{
    const char *s = *p;
    *name = s;
    while (*s && *s != '.' && *s != '[')
        s++;
    *nlen = (size_t)(s - *name);
    *key = s;
    *klen = 0;
    if (*nlen == 0)
        return 0;
    if (*s == '[') {
        s++;
        if (*s == '"') {
            for (s++; *s && *s != '"'; s++)
                if (*s == '\\' && s[1])
                    s++;
            if (*s != '"')
                return 0;
            s++;
        } else {
            while (*s && *s != ']')
                s++;
        }
        if (*s != ']')
            return 0;
        s++;
        *klen = (size_t)(s - *key);
    }
    if (*s != '\0' && *s != '.')
        return 0;
    *p = s;
    return 1;
}

int tftap_address_matches(const char *filter, const char *address)
{
    const char *f = filter, *a = address;
    if (!filter || !address)
        return 0;
    for (;;) {
        const char *fn, *fk, *an, *ak;
        size_t fnl, fkl, anl, akl;
        if (!step(&f, &fn, &fnl, &fk, &fkl) || !step(&a, &an, &anl, &ak, &akl))
            return 0;
        if (fnl != anl || memcmp(fn, an, fnl) != 0)
            return 0;
        if (fkl && (fkl != akl || memcmp(fk, ak, fkl) != 0))
            return 0;
        if (*f == '\0')
            return 1;
        if (*a == '\0')
            return 0; /* the filter goes on */
        f++;
        a++;
    }
}

int tftap_filter_keeps(const char *filter, const char *type, const char *address)
{
    if (!filter)
        return 1;
    if (type && strcmp(type, filter) == 0)
        return 1;
    return tftap_address_matches(filter, address);
}
