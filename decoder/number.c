/* decoder: exact number rendering. Numbers are never rounded through a
 * double unless they arrived as one: decimal strings are validated and
 * normalised textually, floats print in shortest round-trip form. */
#include "decoder/decoder_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds one unit in the last place to the digits of a %g string, in place;
 * 0 when that would need one more digit (all nines). */
static int bump_last_digit(char *s)
{
    char *e = strpbrk(s, "eE");
    char *p = e ? e : s + strlen(s);
    while (p-- > s) {
        if (*p == '.')
            continue;
        if (*p < '0' || *p > '9')
            return 0;
        if (*p < '9') {
            (*p)++;
            return 1;
        }
        *p = '0';
    }
    return 0;
}

/* Removes the zeros ending the mantissa of a %#g string, and the point
 * if nothing follows it, as %g would have. */
static void strip_trailing_zeros(char *s)
{
    if (!strchr(s, '.'))
        return;
    char *e = strpbrk(s, "eE");
    char *end = e ? e : s + strlen(s);
    char *p = end;
    while (p > s && p[-1] == '0')
        p--;
    if (p > s && p[-1] == '.')
        p--;
    memmove(p, end, strlen(end) + 1);
}

int dec_number_float(double v, tftap_buf *out)
{
    if (isnan(v))
        return TFTAP_EDECODE;
    if (isinf(v)) {
        tftap_buf_puts(out, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return 0;
    }
    if (v == 0) {
        tftap_buf_puts(out, signbit(v) ? "-0" : "0");
        return 0;
    }
    /* Integral values that fit print as integers, without exponent. */
    if (v == trunc(v) && fabs(v) < 9007199254740992.0) {
        tftap_buf_printf(out, "%.0f", v);
        return 0;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (back == v)
            break;
        /* %g rounds to the nearest prec-digit decimal. At a power of two
         * the values that read back as v reach less far below it than
         * above, so when that decimal falls just short, the next one up
         * can still read back as v (2^896: 5.282945311356653e+269, where
         * %.16g gives ...652). */
        if (fabs(back) < fabs(v)) {
            snprintf(buf, sizeof buf, "%#.*g", prec, v); /* keeps trailing zeros */
            if (bump_last_digit(buf) && strtod(buf, NULL) == v) {
                strip_trailing_zeros(buf);
                break;
            }
            snprintf(buf, sizeof buf, "%.*g", prec, v);
        }
    }
    tftap_buf_puts(out, buf);
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int dec_number_decimal(const char *s, size_t n, tftap_buf *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (n - i == 3 && (memcmp(s + i, "Inf", 3) == 0 || memcmp(s + i, "inf", 3) == 0)) {
        tftap_buf_puts(out, neg ? "\"-Infinity\"" : "\"Infinity\"");
        return 0;
    }
    size_t int_start = i;
    while (i < n && is_digit(s[i]))
        i++;
    size_t int_end = i;
    size_t frac_start = i, frac_end = i;
    if (i < n && s[i] == '.') {
        frac_start = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        frac_end = i;
    }
    if (int_end == int_start && frac_end == frac_start)
        return TFTAP_EDECODE; /* no digits at all */
    size_t exp_start = i, exp_end = i;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        exp_start = i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == d)
            return TFTAP_EDECODE;
        /* go-cty's big.Float cannot hold a decimal exponent anywhere near
         * a billion (its binary exponent is an int32): refuse what it would
         * refuse or turn into infinity rather than pass on a number no
         * reader can use. */
        while (d < i - 1 && s[d] == '0')
            d++;
        if (i - d > 8)
            return TFTAP_ELIMIT;
        exp_end = i;
    }
    if (i != n)
        return TFTAP_EDECODE;

    /* JSON wants: no '+', no leading zeros, a digit on each side of '.'. */
    if (neg)
        tftap_buf_putc(out, '-');
    size_t z = int_start;
    while (z + 1 < int_end && s[z] == '0')
        z++;
    if (z == int_end)
        tftap_buf_putc(out, '0');
    else
        tftap_buf_append(out, s + z, int_end - z);
    if (frac_end > frac_start) {
        tftap_buf_putc(out, '.');
        tftap_buf_append(out, s + frac_start, frac_end - frac_start);
    }
    if (exp_end > exp_start)
        tftap_buf_append(out, s + exp_start, exp_end - exp_start);
    return 0;
}

int dec_json_number_valid(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n)
        return 0;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && is_digit(s[i]))
            i++;
    } else {
        return 0;
    }
    if (i < n && s[i] == '.') {
        i++;
        size_t d = i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == d)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == d)
            return 0;
    }
    return i == n;
}
