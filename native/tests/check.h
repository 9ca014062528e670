/* Minimal assertions for the C unit tests: a failed CHECK prints where and
 * why and makes the test binary exit non-zero. */
#ifndef ROAST_TEST_CHECK_H
#define ROAST_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

/* Each CHECK macro names the call site and the expressions; these report. */
static inline void check_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: %s failed\n", file, line, what);
    check_failures++;
}

static inline void check_eq_u(const char *file, int line, const char *what,
                              unsigned long long a, unsigned long long b)
{
    if (a != b) {
        fprintf(stderr, "%s:%d: %s failed: %llu != %llu\n", file, line, what, a, b);
        check_failures++;
    }
}

/* Equal, or both NaN. */
static inline void check_eq_d(const char *file, int line, const char *what, double a, double b)
{
    if (!(a == b || (isnan(a) && isnan(b)))) {
        fprintf(stderr, "%s:%d: %s failed: %.17g != %.17g\n", file, line, what, a, b);
        check_failures++;
    }
}

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            check_fail(__FILE__, __LINE__, "CHECK(" #cond ")");                \
    } while (0)

#define CHECK_EQ_U(a, b)                                                       \
    check_eq_u(__FILE__, __LINE__, #a " == " #b, (unsigned long long)(a),      \
               (unsigned long long)(b))

#define CHECK_EQ_D(a, b) check_eq_d(__FILE__, __LINE__, #a " == " #b, (a), (b))

/* text holds part (an error message names what it should). */
static inline void check_contains(const char *file, int line, const char *text, const char *part)
{
    if (!strstr(text, part)) {
        fprintf(stderr, "%s:%d: expected \"%s\" in \"%s\"\n", file, line, part, text);
        check_failures++;
    }
}

#define CHECK_CONTAINS(text, part) check_contains(__FILE__, __LINE__, (text), (part))

#define CHECK_STR(view, literal)                                               \
    CHECK((view).len == strlen(literal) &&                                     \
          memcmp((view).ptr, (literal), (view).len) == 0)

#define RUN(test)                                                              \
    do {                                                                       \
        int before_ = check_failures;                                          \
        test();                                                                \
        printf("%s %s\n", check_failures == before_ ? "ok  " : "FAIL", #test); \
    } while (0)

#define CHECK_DONE() (check_failures ? (fprintf(stderr, "%d check(s) failed\n", check_failures), 1) : 0)

#endif
