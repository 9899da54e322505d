/* A tiny assertion header: failures print both operands and where. */
#ifndef TFTAP_TESTS_CHECK_H
#define TFTAP_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                                         \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        check_count++;                                                                             \
        if (check_a_ != check_b_) {                                                                \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__, __LINE__, #a, #b,  \
                    check_a_, check_b_);                                                           \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                                         \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        check_count++;                                                                             \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {                           \
            fprintf(stderr, "%s:%d: %s == %s failed:\n  got:      %s\n  expected: %s\n", __FILE__, \
                    __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",                              \
                    check_b_ ? check_b_ : "(null)");                                               \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* Call at the end of main(): prints the closing line and returns the exit code. */
/* A test that ran no check tested nothing: that fails too. */
static inline int check_report(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_count - check_failures, check_failures);
    if (check_count == 0)
        printf("%s: no check ran\n", name);
    return check_failures || check_count == 0 ? 1 : 0;
}

#endif
