/* common's run-time loader (tftap_lib_load): a library that is not there
 * and one that lacks a symbol fail with a reason naming them and fill
 * nothing; one that loads fills every pointer, which then works; each
 * answer is given once and kept. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "tests/check.h"

int main(void)
{
    /* No such library: the loader's reason names the file. */
    void *fn = (void *)&fn;
    const struct tftap_dlsym one[] = {{"cos", &fn}};
    tftap_lib none = {.soname = "libtftap-no-such-library.so.0", .syms = one, .nsyms = 1};
    CHECK_INT_EQ(tftap_lib_load(&none), TFTAP_ENOLIB);
    CHECK(strstr(none.why, "libtftap-no-such-library.so.0") != NULL);
    CHECK(strchr(none.why, '\n') == NULL);
    CHECK(fn == (void *)&fn); /* nothing filled */
    /* Asked again: the same answer, without trying again. */
    none.soname = "libm.so.6";
    CHECK_INT_EQ(tftap_lib_load(&none), TFTAP_ENOLIB);
    CHECK(strstr(none.why, "libtftap-no-such-library.so.0") != NULL);

    /* A library without one of the symbols (an older one than the headers):
     * refused, naming the symbol, and what was found before it is cleared. */
    __typeof__(cos) *m_cos = NULL, *m_sin = NULL;
    const struct tftap_dlsym partial[] = {{"cos", (void **)&m_cos},
                                          {"tftap_no_such_symbol", (void **)&m_sin}};
    tftap_lib older = {.soname = "libm.so.6", .syms = partial, .nsyms = 2};
    CHECK_INT_EQ(tftap_lib_load(&older), TFTAP_ENOLIB);
    CHECK(strstr(older.why, "libm.so.6") != NULL);
    CHECK(strstr(older.why, "tftap_no_such_symbol") != NULL);
    CHECK(m_cos == NULL);
    CHECK(m_sin == NULL);

    /* Everything there: every pointer filled, and the functions work. */
    const struct tftap_dlsym both[] = {{"cos", (void **)&m_cos}, {"sin", (void **)&m_sin}};
    tftap_lib m = {.soname = "libm.so.6", .syms = both, .nsyms = 2};
    CHECK_INT_EQ(tftap_lib_load(&m), 0);
    CHECK(m_cos != NULL && m_sin != NULL);
    if (m_cos && m_sin) {
        volatile double zero = 0.0; /* not folded by the compiler */
        CHECK(m_cos(zero) == 1.0);
        CHECK(m_sin(zero) == 0.0);
    }
    CHECK_STR_EQ(m.why, "");
    CHECK_INT_EQ(tftap_lib_load(&m), 0);

    CHECK_STR_EQ(tftap_strerror(TFTAP_ENOLIB), "a shared library could not be loaded");
    return check_report("test_dl");
}
