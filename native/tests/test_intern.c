#include <string.h>

#include "check.h"
#include "roast/intern.h"

static void test_empty_is_id_zero(void)
{
    roast_intern *t = roast_intern_new(16);
    roast_id id = 99;
    CHECK(roast_intern_put(t, "", 0, &id) == ROAST_OK);
    CHECK_EQ_U(id, ROAST_ID_EMPTY);
    CHECK_STR(roast_intern_get(t, ROAST_ID_EMPTY), "");
    CHECK_EQ_U(roast_intern_count(t), 1);
    roast_intern_free(t);
}

static void test_ids_are_stable_and_dense(void)
{
    roast_intern *t = roast_intern_new(1000);
    roast_id a, b, a2;
    CHECK(roast_intern_put(t, "tcp://127.0.0.1:1", 17, &a) == ROAST_OK);
    CHECK(roast_intern_put(t, "thread-cpu", 10, &b) == ROAST_OK);
    CHECK(roast_intern_put(t, "tcp://127.0.0.1:1", 17, &a2) == ROAST_OK);
    CHECK_EQ_U(a, 1);
    CHECK_EQ_U(b, 2);
    CHECK_EQ_U(a2, a);
    CHECK_STR(roast_intern_get(t, b), "thread-cpu");
    char buf[32];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(buf, sizeof buf, "prefix-%d", i);
        roast_id id;
        CHECK(roast_intern_put(t, buf, (size_t)n, &id) == ROAST_OK);
        CHECK_EQ_U(id, 3 + i);
    }
    CHECK_STR(roast_intern_get(t, a), "tcp://127.0.0.1:1");
    CHECK_STR(roast_intern_get(t, 3 + 499), "prefix-499");
    roast_intern_free(t);
}

static void test_embedded_nul_and_unknown_id(void)
{
    roast_intern *t = roast_intern_new(8);
    roast_id x, y;
    CHECK(roast_intern_put(t, "a\0b", 3, &x) == ROAST_OK);
    CHECK(roast_intern_put(t, "a", 1, &y) == ROAST_OK);
    CHECK(x != y);
    CHECK_EQ_U(roast_intern_get(t, x).len, 3);
    CHECK_EQ_U(roast_intern_get(t, 12345).len, 0);
    CHECK(!roast_intern_find(t, "zz", 2, &x));
    roast_intern_free(t);
}

static void test_bound_counts_overflow(void)
{
    roast_intern *t = roast_intern_new(3);
    roast_id id;
    CHECK(roast_intern_put(t, "a", 1, &id) == ROAST_OK);
    CHECK(roast_intern_put(t, "b", 1, &id) == ROAST_OK);
    CHECK(roast_intern_put(t, "c", 1, &id) == ROAST_EFULL);
    CHECK(roast_intern_put(t, "a", 1, &id) == ROAST_OK); /* existing strings still resolve */
    CHECK_EQ_U(roast_intern_overflows(t), 1);
    CHECK_EQ_U(roast_intern_count(t), 3);
    roast_intern_free(t);
}

static void test_foldable_strings_fold_beyond_the_soft_bound(void)
{
    roast_intern *t = roast_intern_new(6);
    roast_id a, b, folded, again, span;
    CHECK(roast_intern_put_foldable(t, "a", 1, &a) == ROAST_OK); /* no fold set: plain put */
    roast_intern_set_fold(t, 3, "(bucket)");
    CHECK(roast_intern_put_foldable(t, "b", 1, &b) == ROAST_OK);
    CHECK_EQ_U(roast_intern_count(t), 3);
    CHECK(roast_intern_put_foldable(t, "c", 1, &folded) == ROAST_OK); /* the bucket, interned now */
    CHECK(memcmp(roast_intern_get(t, folded).ptr, "(bucket)", 8) == 0);
    CHECK(roast_intern_put_foldable(t, "d", 1, &again) == ROAST_OK && again == folded);
    CHECK(roast_intern_put_foldable(t, "b", 1, &again) == ROAST_OK && again == b);
    CHECK_EQ_U(roast_intern_folds(t), 2);
    /* what must be kept still has room */
    CHECK(roast_intern_put(t, "span-1", 6, &span) == ROAST_OK && span != folded);
    CHECK(roast_intern_put(t, "span-2", 6, &span) == ROAST_OK);
    CHECK(roast_intern_put(t, "span-3", 6, &span) == ROAST_EFULL);
    /* past the hard bound the bucket still answers */
    CHECK(roast_intern_put_foldable(t, "e", 1, &again) == ROAST_OK && again == folded);
    CHECK_EQ_U(roast_intern_folds(t), 3);
    roast_intern_free(t);
}

int main(void)
{
    RUN(test_empty_is_id_zero);
    RUN(test_ids_are_stable_and_dense);
    RUN(test_embedded_nul_and_unknown_id);
    RUN(test_bound_counts_overflow);
    RUN(test_foldable_strings_fold_beyond_the_soft_bound);
    return CHECK_DONE();
}
