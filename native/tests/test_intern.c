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

/* Many strings of every length around the memo's (48 bytes), far more than
 * its slots, looked up again in another order: the memo in front of the
 * index must give the index's ids, and absent strings stay absent. */
static void test_memo_agrees_with_the_index(void)
{
    enum { N = 3000 };
    roast_intern *t = roast_intern_new(N + 1);
    static char text[N][64];
    size_t lens[N];
    roast_id ids[N];
    for (int i = 0; i < N; i++) {
        size_t len = (size_t)(1 + i % 60);
        for (size_t j = 0; j < len; j++)
            text[i][j] = (char)('a' + (i * 7 + (int)j) % 26);
        memcpy(text[i], &i, sizeof i < len ? sizeof i : len); /* distinct, NULs included */
        lens[i] = len;
        CHECK(roast_intern_put(t, text[i], len, &ids[i]) == ROAST_OK);
    }
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < N; k++) {
            int i = (k * 7919 + round * 13) % N;
            roast_id id = 0;
            CHECK(round % 2 ? roast_intern_find(t, text[i], lens[i], &id)
                            : roast_intern_put(t, text[i], lens[i], &id) == ROAST_OK);
            CHECK_EQ_U(id, ids[i]);
        }
    }
    CHECK_EQ_U(roast_intern_count(t), N + 1);
    char absent[48];
    memset(absent, 'z', sizeof absent);
    roast_id id;
    for (size_t len = 1; len <= sizeof absent; len++)
        CHECK(!roast_intern_find(t, absent, len, &id));
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
    RUN(test_memo_agrees_with_the_index);
    RUN(test_embedded_nul_and_unknown_id);
    RUN(test_bound_counts_overflow);
    RUN(test_foldable_strings_fold_beyond_the_soft_bound);
    return CHECK_DONE();
}
