/* Minimal assertions for the C unit tests: a failed CHECK prints where and
 * why and makes the test binary exit non-zero. */
#ifndef ROAST_TEST_CHECK_H
#define ROAST_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            check_failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_EQ_U(a, b)                                                       \
    do {                                                                       \
        unsigned long long check_a_ = (unsigned long long)(a);                 \
        unsigned long long check_b_ = (unsigned long long)(b);                 \
        if (check_a_ != check_b_) {                                            \
            fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n",          \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);           \
            check_failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_EQ_D(a, b)                                                       \
    do {                                                                       \
        double check_a_ = (a), check_b_ = (b);                                 \
        if (!(check_a_ == check_b_ || (isnan(check_a_) && isnan(check_b_)))) { \
            fprintf(stderr, "%s:%d: %s == %s failed: %.17g != %.17g\n",        \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);           \
            check_failures++;                                                  \
        }                                                                      \
    } while (0)

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
