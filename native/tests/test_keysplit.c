#include "check.h"
#include "roast/keysplit.h"

typedef struct vector {
    const char *key;
    const char *want; /* dask.utils.key_split(key), checked against dask 2026.8.0 */
} vector;

/* The doctests of dask.utils.key_split (str and bytes keys), then the extra
 * edge cases of reference/dask-internals.md §8.4 (the elided keys written
 * out), then a few more found while porting. */
static const vector ascii_vectors[] = {
    {"x", "x"},
    {"x-1", "x"},
    {"x-1-2-3", "x"},
    {"('x-2', 1)", "x"},
    {"('x', 1)", "x"},
    {"hello-world-1", "hello-world"},
    {"ae05086432ca935f6eba409a8ecd4896", "data"},
    {"<module.submodule.myclass object at 0xdaf372", "myclass"},
    {"x-abcdefab", "x"},
    {"_(x)", "x"},

    {"x--1", "x"},
    {"x-abcdefgh", "x"},
    {"x-deadline", "x"},
    {"x-feedback", "x"},
    {"x-Deadbeef", "x-Deadbeef"},
    {"x-ABCDEFAB", "x-ABCDEFAB"},
    {"x-abcdefa", "x-abcdefa"},
    {"x-abcdefabc", "x-abcdefabc"},
    {"x-dbeefcafe", "x-dbeefcafe"},
    {"x-1a", "x"},
    {"x-a1", "x"},
    {"x-abc_d", "x"},
    {"x-_a", "x"},
    {"__", "Other"},
    {"_-x", "-x"},
    {"", "Other"},
    {"-1", "Other"},
    {"1", "1"},
    {"(1, 2)", "1"},
    {"(\"x\", 1)", "x"},
    {"(x-1)", "x"},
    {"_x-1", "x"},
    {"x-y-z", "x-y-z"},
    {"hello-World-1", "hello-World"},
    {"X-1", "X"},
    {"AE05086432CA935F6EBA409A8ECD4896", "AE05086432CA935F6EBA409A8ECD4896"},
    {"ae05086432ca935f6eba409a8ecd4896-1", "data"},
    {"ae05086432ca935f6eba409a8ecd489", "ae05086432ca935f6eba409a8ecd489"},
    {"inc-ae05086432ca935f6eba409a8ecd4896", "inc"},
    {"f7d1c9a4-6a4e-4c3b-9a8e-1f2d3c4b5a6e", "f7d1c9a4"},
    {"task-f7d1c9a4-6a4e-4c3b-9a8e-1f2d3c4b5a6e", "task"},
    {"finalize-hlgfinalizecompute-0d9b5c6e7f8a9b0c1d2e3f4a5b6c7d8e", "finalize-hlgfinalizecompute"},
    {"('getitem-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d', 0)", "getitem"},
    {"read-parquet-fused-values-abc123", "read-parquet-fused-values"},
    {"sum-aggregate-abc", "sum-aggregate-abc"},
    {"1-x", "1-x"},
    {"<lambda>", "lambda"},
    {"<lambda>-abc", "lambda>-abc"},
    {"<>", "Other"},
    {"< a.b.c d>-1", "c"},
    {"x y-1", "x y"},
    {"x,y-1", "x,y"},
    {"('x,y', 1)", "x"},
    {"__main__.f-1", "main__.f"},
    {"x.y-abc", "x.y-abc"},

    {"<a.>", ""},          /* split(".")[-1] can be empty */
    {"<a\x1c" "b.c>", "a"}, /* U+001C is whitespace to str.split() */
    {"< \t>", "Other"},
    {"<", "Other"},
    {"<-x", "-x"},
    {"_<lambda>", "lambda"},
    {"<a>-b<", "a"},
    {"_x_-abc", "x-abc"},
    {"'-'", "Other"},
    {"x-", "x"},
    {"x-a-", "x-a"},
    {"x-abcdefgH", "x"},
    {"x-Abcdefgh", "x-Abcdefgh"},
    {"(x, 1)-a", "x-a"},
};

static void check_split(const roast_charclass *cc, const char *key, size_t len, const char *want)
{
    char out[256];
    size_t n = 12345;
    roast_status st = roast_key_split(key, len, cc, out, sizeof out, &n);
    int ok = st == ROAST_OK && n == strlen(want) && memcmp(out, want, n) == 0;
    if (!ok)
        fprintf(stderr, "key_split(\"%s\"): status %d, got \"%.*s\", want \"%s\"\n", key, (int)st,
                (int)(st == ROAST_OK ? n : 0), out, want);
    CHECK(ok);
}

static void test_ascii_vectors(void)
{
    for (size_t i = 0; i < sizeof ascii_vectors / sizeof *ascii_vectors; i++)
        check_split(&roast_charclass_ascii, ascii_vectors[i].key, strlen(ascii_vectors[i].key),
                    ascii_vectors[i].want);
}

static void test_embedded_nul(void)
{
    /* Python str may hold NUL; it is neither alpha nor space. */
    char out[16];
    size_t n;
    CHECK(roast_key_split("x\0-a", 4, &roast_charclass_ascii, out, sizeof out, &n) == ROAST_OK);
    CHECK(n == 4 && memcmp(out, "x\0-a", 4) == 0);
    CHECK(roast_key_split("x-a\0", 4, &roast_charclass_ascii, out, sizeof out, &n) == ROAST_OK);
    CHECK(n == 1 && out[0] == 'x');
}

/* A tiny Unicode class: the letters of the vectors below are alpha, the
 * Arabic-Indic digit one (U+0661) is not, U+00A0 is whitespace. */
static bool test_is_alpha(uint32_t c)
{
    return roast_charclass_ascii.is_alpha(c) || c == 0x03BB /* λ */ || c == 0x00E9 /* é */ ||
           c == 0x00F1 /* ñ */ || c == 0x00FA /* ú */;
}

static bool test_is_space(uint32_t c) { return roast_charclass_ascii.is_space(c) || c == 0x00A0; }

static const roast_charclass unicode_cc = {test_is_alpha, test_is_space};

static void test_unicode_vectors(void)
{
    static const vector v[] = {
        {"\xce\xbb-1", "\xce\xbb"},                                      /* 'λ-1' -> 'λ' */
        {"\xc3\xa9-abc", "\xc3\xa9-abc"},                                /* 'é-abc' */
        {"x-\xc3\xb1" "and\xc3\xba", "x-\xc3\xb1" "and\xc3\xba"},        /* 'x-ñandú' */
        {"x-\xc3\xa9" "abcdef", "x-\xc3\xa9" "abcdef"},                  /* 'x-éabcdef' */
        {"x-\xd9\xa1", "x"},                                             /* 'x-١' */
        {"\xd9\xa1-x", "\xd9\xa1-x"},                                    /* '١-x' */
        {"<a\xc2\xa0" "b.c>", "a"},                                      /* '<a\xa0b.c>' */
        {"x-abcd\xc3\xa9" "fgh", "x"},                    /* 8 code points from a: hex-like */
        {"x-\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb",
         "x-\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb\xce\xbb"}, /* 16 bytes, 8 letters */
        {"\xc3\xb1" "and\xc3\xba" "abc-1", "\xc3\xb1" "and\xc3\xba" "abc"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        check_split(&unicode_cc, v[i].key, strlen(v[i].key), v[i].want);
    /* The ASCII class knows no non-ASCII letter: 'x-ñandú' stops at ñ. */
    check_split(&roast_charclass_ascii, "x-\xc3\xb1" "and\xc3\xba", 9, "x");
    check_split(&roast_charclass_ascii, "<a\xc2\xa0" "b.c>", 8, "c");
}

static void test_malformed_utf8(void)
{
    static const char *bad[] = {
        "\xff-1",             /* never valid */
        "x-\xc0\x80",         /* overlong NUL */
        "\xe0\x80\xaf",       /* overlong '/' */
        "\xed\xa0\x80-x",     /* surrogate U+D800 */
        "\xf4\x90\x80\x80",   /* above U+10FFFF */
        "x-\xe2\x82",         /* truncated */
        "\x80x",              /* lone continuation byte */
        "\xf0\x9f\x98",       /* truncated 4-byte */
    };
    char out[32];
    size_t n;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(roast_key_split(bad[i], strlen(bad[i]), &roast_charclass_ascii, out, sizeof out, &n) ==
              ROAST_EMALFORMED);
    /* The largest and the edge code points are fine. */
    CHECK(roast_key_split("\xf4\x8f\xbf\xbf-1", 6, &roast_charclass_ascii, out, sizeof out, &n) ==
          ROAST_OK);
    CHECK(roast_key_split("\xed\x9f\xbf-1", 5, &roast_charclass_ascii, out, sizeof out, &n) == ROAST_OK);
}

static void test_output_capacity(void)
{
    char out[8];
    size_t n;
    /* len + 8 always suffices, even for the short constant answers. */
    CHECK(roast_key_split("", 0, &roast_charclass_ascii, out, 8, &n) == ROAST_OK);
    CHECK(n == 5 && memcmp(out, "Other", 5) == 0);
    CHECK(roast_key_split(NULL, 0, &roast_charclass_ascii, out, 8, &n) == ROAST_OK);
    CHECK(roast_key_split("", 0, &roast_charclass_ascii, out, 4, &n) == ROAST_EINVAL);
    CHECK(roast_key_split("hello-world-1", 13, &roast_charclass_ascii, out, 8, &n) == ROAST_EINVAL);
    CHECK(roast_key_split("x-1", 3, &roast_charclass_ascii, out, 1, &n) == ROAST_OK);
    CHECK(n == 1 && out[0] == 'x');
    CHECK(roast_key_split("x", 1, NULL, out, 8, &n) == ROAST_EINVAL);
}

static void test_hash(void)
{
    const char *a = "finalize-hlgfinalizecompute-0d9b5c6e7f8a9b0c1d2e3f4a5b6c7d8e";
    CHECK(roast_keysplit_hash(a, strlen(a)) == roast_keysplit_hash(a, strlen(a)));
    CHECK(roast_keysplit_hash("ab", 2) != roast_keysplit_hash("ab\0", 3));
    CHECK(roast_keysplit_hash("", 0) != roast_keysplit_hash("\0", 1));
    /* Keys that differ in one byte spread over the 32 bits uthash uses. */
    char key[24] = "task-00000000000000000";
    uint64_t or_bits = 0, and_bits = ~(uint64_t)0;
    for (int i = 0; i < 1000; i++) {
        snprintf(key + 5, sizeof key - 5, "%017d", i);
        uint64_t h = roast_keysplit_hash(key, 22);
        or_bits |= h;
        and_bits &= h;
    }
    CHECK(or_bits == ~(uint64_t)0 && and_bits == 0);
}

static void test_cache_counts_and_agrees(void)
{
    roast_intern *strings = roast_intern_new(1 << 12);
    roast_keysplit_cache *cache = roast_keysplit_cache_new(1024, &roast_charclass_ascii);
    CHECK(roast_keysplit_cache_new(0, &roast_charclass_ascii) == NULL);
    const char *keys[] = {"x-1", "hello-world-1", "('x-2', 1)", "x-1", "<lambda>", "x-1", "hello-world-1"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        size_t len = strlen(keys[i]);
        roast_id id;
        CHECK(roast_keysplit_cached(cache, strings, keys[i], len, roast_keysplit_hash(keys[i], len),
                                    &id) == ROAST_OK);
        char out[64];
        size_t n;
        roast_key_split(keys[i], len, &roast_charclass_ascii, out, sizeof out, &n);
        roast_str got = roast_intern_get(strings, id);
        CHECK(got.len == n && memcmp(got.ptr, out, n) == 0);
    }
    /* 4 distinct keys: the repeats hit unless two of them share a slot */
    uint64_t hits = roast_keysplit_cache_hits(cache), misses = roast_keysplit_cache_misses(cache);
    CHECK_EQ_U(hits + misses, 7);
    CHECK_EQ_U(misses, 4 + roast_keysplit_cache_evictions(cache));
    roast_keysplit_cache_free(cache);
    roast_intern_free(strings);
}

static void test_cache_at_scale(void)
{
    roast_intern *strings = roast_intern_new(1 << 16);
    roast_keysplit_cache *cache = roast_keysplit_cache_new(1000, &roast_charclass_ascii);
    char key[64];
    int bad = 0;
    /* 3000 distinct keys twice in a row each: every second lookup hits. */
    for (int i = 0; i < 3000; i++) {
        int len = snprintf(key, sizeof key, "%s-%d", i % 3 ? "getitem" : "read-parquet", i * 7919);
        for (int rep = 0; rep < 2; rep++) {
            roast_id id;
            bad += roast_keysplit_cached(cache, strings, key, (size_t)len,
                                         roast_keysplit_hash(key, (size_t)len), &id) != ROAST_OK;
            roast_str got = roast_intern_get(strings, id);
            bad += !(i % 3 ? got.len == 7 && memcmp(got.ptr, "getitem", 7) == 0
                           : got.len == 12 && memcmp(got.ptr, "read-parquet", 12) == 0);
        }
    }
    CHECK_EQ_U(bad, 0);
    CHECK_EQ_U(roast_keysplit_cache_hits(cache), 3000);
    CHECK_EQ_U(roast_keysplit_cache_misses(cache), 3000);
    /* 3000 keys in 1024 slots: at least 3000 - 1024 took a slot from another */
    CHECK(roast_keysplit_cache_evictions(cache) >= 3000 - 1024);
    /* A caller-supplied hash works the same; a colliding hash still finds
     * the right key, because keys are compared byte for byte. */
    roast_id a, b;
    CHECK(roast_keysplit_cached(cache, strings, "alpha-1", 7, 42, &a) == ROAST_OK);
    CHECK(roast_keysplit_cached(cache, strings, "beta-1", 6, 42, &b) == ROAST_OK);
    CHECK(a != b);
    CHECK_STR(roast_intern_get(strings, a), "alpha");
    CHECK_STR(roast_intern_get(strings, b), "beta");
    CHECK(roast_keysplit_cached(cache, strings, "alpha-1", 7, 42, &b) == ROAST_OK);
    CHECK_EQ_U(b, a);
    /* Malformed keys are reported and not cached. */
    roast_id id;
    CHECK(roast_keysplit_cached(cache, strings, "\xff", 1, 1, &id) == ROAST_EMALFORMED);
    CHECK(roast_keysplit_cached(cache, strings, "\xff", 1, 1, &id) == ROAST_EMALFORMED);
    CHECK(roast_keysplit_cached(cache, strings, NULL, 0, 0, &id) == ROAST_OK);
    CHECK_STR(roast_intern_get(strings, id), "Other");
    roast_keysplit_cache_free(cache);
    roast_intern_free(strings);
}

static void test_cache_long_key(void)
{
    /* Longer than the cache's stack buffer. */
    static char key[1000];
    memset(key, 'q', sizeof key);
    key[500] = '-';
    roast_intern *strings = roast_intern_new(16);
    roast_keysplit_cache *cache = roast_keysplit_cache_new(10, &roast_charclass_ascii);
    roast_id id;
    CHECK(roast_keysplit_cached(cache, strings, key, sizeof key, roast_keysplit_hash(key, sizeof key),
                                &id) == ROAST_OK);
    CHECK_EQ_U(roast_intern_get(strings, id).len, 1000); /* all letters: nothing cut */
    roast_keysplit_cache_free(cache);
    roast_intern_free(strings);
}

int main(void)
{
    RUN(test_ascii_vectors);
    RUN(test_embedded_nul);
    RUN(test_unicode_vectors);
    RUN(test_malformed_utf8);
    RUN(test_output_capacity);
    RUN(test_hash);
    RUN(test_cache_counts_and_agrees);
    RUN(test_cache_at_scale);
    RUN(test_cache_long_key);
    return CHECK_DONE();
}
