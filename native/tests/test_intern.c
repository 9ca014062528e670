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

int main(void)
{
    RUN(test_empty_is_id_zero);
    RUN(test_ids_are_stable_and_dense);
    RUN(test_embedded_nul_and_unknown_id);
    RUN(test_bound_counts_overflow);
    return CHECK_DONE();
}
