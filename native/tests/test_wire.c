#include <msgpack.h>

#include "agg_dump.h"
#include "check.h"
#include "roast/wire.h"

/* ---- helpers --------------------------------------------------------- */

/* An exact-size heap copy, so ASan sees any read past the input. */
static char *exact_copy(const char *p, size_t n)
{
    char *c = malloc(n ? n : 1);
    if (n)
        memcpy(c, p, n);
    return c;
}

static roast_str S(const char *s)
{
    roast_str v = {s, strlen(s)};
    return v;
}

static roast_id put(roast_agg *agg, const char *s)
{
    roast_id id = 0;
    CHECK(roast_intern_put(roast_agg_strings(agg), s, strlen(s), &id) == ROAST_OK);
    return id;
}

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* msgpack trees for building malformed inputs out of valid ones. */
static msgpack_object obj_uint(uint64_t u)
{
    msgpack_object o;
    o.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
    o.via.u64 = u;
    return o;
}

static msgpack_object obj_int(int64_t i)
{
    msgpack_object o;
    o.type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
    o.via.i64 = i;
    return o;
}

static msgpack_object obj_float(double d)
{
    msgpack_object o;
    o.type = MSGPACK_OBJECT_FLOAT64;
    o.via.f64 = d;
    return o;
}

static msgpack_object obj_str(const char *s)
{
    msgpack_object o;
    o.type = MSGPACK_OBJECT_STR;
    o.via.str.ptr = s;
    o.via.str.size = (uint32_t)strlen(s);
    return o;
}

static msgpack_object *get_key(msgpack_object *map, const char *key)
{
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static void drop_key(msgpack_object *map, const char *key)
{
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0) {
            map->via.map.ptr[i] = map->via.map.ptr[map->via.map.size - 1];
            map->via.map.size--;
            return;
        }
    }
}

static msgpack_object *at(msgpack_object *arr, uint32_t i)
{
    return &arr->via.array.ptr[i];
}

typedef void (*mutator)(int which, msgpack_object *top);

/* Decodes valid, lets mutate change the tree, and packs it again. */
static char *mutated(const roast_buf *valid, mutator mutate, int which, size_t *len)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&u, valid->data, valid->len, &off) == MSGPACK_UNPACK_SUCCESS);
    mutate(which, &u.data);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_object(&pk, u.data);
    char *copy = exact_copy(sb.data, sb.size);
    *len = sb.size;
    msgpack_sbuffer_destroy(&sb);
    msgpack_unpacked_destroy(&u);
    return copy;
}

/* ---- payload ----------------------------------------------------------- */

static const roast_digest_item sample_digests[] = {
    {{"execute", 7}, {"span-1", 6}, {"inc", 3}, {"thread-cpu", 10}, {"seconds", 7}, 0.125},
    {{"execute", 7}, {"span-1", 6}, {"inc", 3}, {"memory-read", 11}, {"bytes", 5}, 1048576.0},
    {{"gather-dep", 10}, {"", 0}, {"", 0}, {"network", 7}, {"bytes", 5}, -42.0},
    {{"get-data", 8}, {"", 0}, {"", 0}, {"serialize", 9}, {"seconds", 7}, 1e300},
    {{"execute", 7}, {"span-2", 6}, {"sum", 3}, {"disk-write", 10}, {"count", 5}, -0.0},
    {{"execute", 7}, {"span-2", 6}, {"sum", 3}, {"other", 5}, {"seconds", 7}, 0.1},
    {{"execute", 7}, {"span-2", 6}, {"sum", 3}, {"big", 3}, {"count", 5}, 9007199254740993.0},
    {{"execute", 7}, {"span-2", 6}, {"sum", 3}, {"neg", 3}, {"count", 5}, -9.2e18},
};
static void sample_payload(roast_buf *out, const char *inc, uint64_t seq, uint64_t since, bool full)
{
    roast_payload p = {S(inc), seq, since, full, sample_digests,
                       sizeof sample_digests / sizeof sample_digests[0]};
    out->len = 0;
    CHECK(roast_wire_encode_payload(&p, out) == ROAST_OK);
}

static bool view_eq(roast_str a, roast_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static void test_payload_round_trip(void)
{
    roast_buf buf = {0};
    sample_payload(&buf, "Worker-abc", 7, 4, true);
    char *data = exact_copy(buf.data, buf.len);
    roast_payload_decoded *d = NULL;
    char err[256] = "";
    CHECK(roast_wire_decode_payload(data, buf.len, &d, err, sizeof err) == ROAST_OK);
    const roast_payload *p = roast_payload_view(d);
    CHECK_STR(p->incarnation, "Worker-abc");
    CHECK_EQ_U(p->seq, 7);
    CHECK_EQ_U(p->since, 4);
    CHECK(p->full);
    size_t nd = sizeof sample_digests / sizeof sample_digests[0];
    CHECK_EQ_U(p->ndigests, nd);
    for (size_t i = 0; i < nd && i < p->ndigests; i++) {
        const roast_digest_item *a = &sample_digests[i], *b = &p->digests[i];
        CHECK(view_eq(a->context, b->context) && view_eq(a->span, b->span) &&
              view_eq(a->prefix, b->prefix) && view_eq(a->activity, b->activity) &&
              view_eq(a->unit, b->unit));
        CHECK(same_bits(a->value, b->value));
        /* zero copy: the views point into the input */
        CHECK(b->activity.ptr >= data && b->activity.ptr < data + buf.len);
    }
    roast_payload_decoded_free(d);

    /* empty payload; appending encoders keep what the buffer held */
    roast_payload empty = {S(""), 0, 0, false, NULL, 0};
    size_t before = buf.len;
    CHECK(roast_wire_encode_payload(&empty, &buf) == ROAST_OK);
    CHECK(buf.len > before);
    CHECK(roast_wire_decode_payload(buf.data + before, buf.len - before, &d, err, sizeof err) == ROAST_OK);
    CHECK_EQ_U(roast_payload_view(d)->ndigests, 0);
    CHECK(!roast_payload_view(d)->full);
    roast_payload_decoded_free(d);
    free(data);
    roast_buf_free(&buf);
}

static void test_payload_accepts_int_float_str_and_extra_keys(void)
{
    /* a payload written by another packer: float32 and int values, extra keys
     * (an earlier build's "records" among them), keys in another order */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 8);
    msgpack_pack_str_with_body(&pk, "records", 7);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint8(&pk, 9);
    msgpack_pack_str_with_body(&pk, "txt", 3);
    msgpack_pack_str_with_body(&pk, "future", 6);
    msgpack_pack_nil(&pk);
    msgpack_pack_str_with_body(&pk, "full", 4);
    msgpack_pack_false(&pk);
    msgpack_pack_str_with_body(&pk, "since", 5);
    msgpack_pack_uint64(&pk, 0);
    msgpack_pack_str_with_body(&pk, "seq", 3);
    msgpack_pack_uint64(&pk, 1ull << 40);
    msgpack_pack_str_with_body(&pk, "inc", 3);
    msgpack_pack_str_with_body(&pk, "I", 1);
    msgpack_pack_str_with_body(&pk, "v", 1);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_str_with_body(&pk, "digests", 7);
    msgpack_pack_array(&pk, 3);
    double expect[3] = {1.5, -7, 12345678};
    for (int i = 0; i < 3; i++) {
        msgpack_pack_array(&pk, 6);
        for (int j = 0; j < 5; j++)
            msgpack_pack_str_with_body(&pk, "x", 1);
        if (i == 0)
            msgpack_pack_float(&pk, 1.5f);
        else if (i == 1)
            msgpack_pack_int8(&pk, -7);
        else
            msgpack_pack_uint32(&pk, 12345678);
    }
    char *data = exact_copy(sb.data, sb.size);
    roast_payload_decoded *d = NULL;
    char err[256] = "";
    CHECK(roast_wire_decode_payload(data, sb.size, &d, err, sizeof err) == ROAST_OK);
    if (d) {
        const roast_payload *p = roast_payload_view(d);
        CHECK_EQ_U(p->seq, 1ull << 40);
        for (int i = 0; i < 3; i++)
            CHECK_EQ_D(p->digests[i].value, expect[i]);
        roast_payload_decoded_free(d);
    }
    free(data);
    msgpack_sbuffer_destroy(&sb);
}

static void expect_malformed_payload(const char *data, size_t len, const char *expect)
{
    roast_payload_decoded *d = (roast_payload_decoded *)1;
    char err[256] = "";
    roast_status st = roast_wire_decode_payload(data, len, &d, err, sizeof err);
    CHECK(st == ROAST_EMALFORMED);
    CHECK(d == NULL);
    CHECK_CONTAINS(err, expect);
}

static void test_payload_truncated_everywhere(void)
{
    roast_buf buf = {0};
    sample_payload(&buf, "Worker-abc", 3, 2, false);
    for (size_t n = 0; n < buf.len; n++) {
        char *part = exact_copy(buf.data, n);
        expect_malformed_payload(part, n, n == 0 ? "empty input" : "payload: ");
        free(part);
    }
    char *more = exact_copy(buf.data, buf.len + 1);
    memcpy(more, buf.data, buf.len);
    more[buf.len] = (char)0xc0;
    expect_malformed_payload(more, buf.len + 1, "1 trailing bytes after the top object");
    free(more);
    roast_buf_free(&buf);
}

static void payload_mutate(int which, msgpack_object *top)
{
    static const char *keys[] = {"v", "inc", "seq", "since", "full", "digests"};
    msgpack_object *digests = get_key(top, "digests");
    if (which < 6) {
        drop_key(top, keys[which]);
        return;
    }
    switch (which) {
    case 6: *get_key(top, "v") = obj_uint(2); break;
    case 7: *get_key(top, "v") = obj_str("1"); break;
    case 8: *get_key(top, "seq") = obj_int(-1); break;
    case 9: *get_key(top, "seq") = obj_float(1.0); break;
    case 10: *get_key(top, "full") = obj_uint(1); break;
    case 11: *get_key(top, "inc") = obj_uint(5); break;
    case 12: *digests = obj_str("no"); break;
    case 13: at(digests, 1)->via.array.size = 5; break;
    case 14: *at(at(digests, 1), 2) = obj_uint(3); break;
    case 15: *at(at(digests, 3), 5) = obj_str("1.0"); break;
    case 16: top->via.map.ptr[1].key = obj_str("v"); break;
    case 17: top->via.map.ptr[0].key = obj_uint(7); break;
    case 18: top->type = MSGPACK_OBJECT_ARRAY; top->via.array.size = 0; break;
    case 19: *get_key(top, "since") = obj_float(NAN); break;
    case 20: *at(digests, 0) = obj_uint(0); break;
    default: break;
    }
}

static void test_payload_wrong_types_and_missing_keys(void)
{
    static const char *expect[] = {
        "payload: missing key \"v\"", "payload: missing key \"inc\"",
        "payload: missing key \"seq\"", "payload: missing key \"since\"",
        "payload: missing key \"full\"", "payload: missing key \"digests\"",
        "payload: version 2 is newer than this build's version 1",
        "payload.v: expected an unsigned integer",
        "payload.seq: expected an unsigned integer",
        "payload.seq: expected an unsigned integer",
        "payload.full: expected a boolean",
        "payload.inc: expected a string",
        "payload.digests: expected an array",
        "payload.digests[1]: expected an array of 6",
        "payload.digests[1][2]: expected a string",
        "payload.digests[3][5]: expected a number",
        "payload: duplicate key \"v\"",
        "payload: key 0 is not a string",
        "payload: expected a map",
        "payload.since: expected an unsigned integer",
        "payload.digests[0]: expected an array of 6",
    };
    roast_buf buf = {0};
    sample_payload(&buf, "W", 3, 2, false);
    for (int i = 0; i < (int)(sizeof expect / sizeof expect[0]); i++) {
        size_t len;
        char *bad = mutated(&buf, payload_mutate, i, &len);
        expect_malformed_payload(bad, len, expect[i]);
        free(bad);
    }
    roast_buf_free(&buf);
}

static void test_payload_hostile_lengths(void)
{
    struct {
        const char *bytes;
        size_t len;
        const char *expect;
    } cases[] = {
        {"\xdd\xff\xff\xff\xff", 5, "declares 4294967295 elements"},
        {"\xdf\xff\xff\xff\xff", 5, "declares 8589934590 elements"},
        {"\xdb\xff\xff\xff\xff" "abc", 8, "declares 4294967295 bytes, only 3 left"},
        {"\xc6\x7f\xff\xff\xff", 5, "declares 2147483647 bytes"},
        {"\xc9\x00\x00\x10\x00\x01", 6, "declares 4096 bytes"},
        {"\x92\x93\xc0\xc0", 4, "elements, only"},         /* 5 promised, 2 bytes */
        {"\x81\xa1v", 3, "truncated at byte 3"},
        {"\xc1", 1, "invalid msgpack type byte 0xc1"},
        {"\xda\x00", 2, "truncated at byte 1"},
        {"\xcb\x00\x00", 3, "declares 8 bytes, only 2 left"},
        {"", 0, "empty input"},
        {"\xc0\xc0", 2, "trailing bytes"},
        {"\xc0", 1, "payload: expected a map"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *data = exact_copy(cases[i].bytes, cases[i].len);
        expect_malformed_payload(data, cases[i].len, cases[i].expect);
        free(data);
    }
    /* nesting beyond the depth limit: [[[[...nil...]]]] */
    char deep[101];
    memset(deep, 0x91, 100);
    deep[100] = (char)0xc0;
    char *data = exact_copy(deep, sizeof deep);
    expect_malformed_payload(data, sizeof deep, "nested deeper than 16");
    free(data);
    /* a valid payload whose digests array claims 2^32-1 rows */
    roast_buf buf = {0};
    roast_payload p = {S("W"), 1, 0, false, NULL, 0};
    CHECK(roast_wire_encode_payload(&p, &buf) == ROAST_OK);
    char *pos = NULL;
    for (size_t i = 0; i + 8 <= buf.len && !pos; i++)
        if (memcmp(buf.data + i, "digests", 7) == 0)
            pos = buf.data + i;
    CHECK(pos != NULL && (unsigned char)pos[7] == 0x90);
    size_t off = (size_t)(pos + 7 - buf.data);
    char *big = malloc(buf.len + 4);
    memcpy(big, buf.data, off);
    memcpy(big + off, "\xdd\xff\xff\xff\xff", 5);
    memcpy(big + off + 5, buf.data + off + 1, buf.len - off - 1);
    expect_malformed_payload(big, buf.len + 4, "declares 4294967295 elements");
    free(big);
    roast_buf_free(&buf);
    roast_payload_decoded *d;
    CHECK(roast_wire_decode_payload("\x80", ROAST_WIRE_MAX_BYTES + 1, &d, NULL, 0) == ROAST_EMALFORMED);
}

static void test_ingest(void)
{
    roast_agg *agg = roast_agg_new(NULL, 100.0);
    roast_id a = put(agg, "tcp://10.0.0.1:4000");
    roast_buf buf = {0};
    char err[256] = "";
    bool flush = true;

    sample_payload(&buf, "Worker-1", 1, 0, false);
    CHECK(roast_agg_ingest_payload(agg, a, 150.0, buf.data, buf.len, &flush, err, sizeof err) == ROAST_OK);
    CHECK(!flush);
    const roast_worker_info *w = roast_agg_worker(agg, a);
    CHECK(w != NULL);
    CHECK_EQ_D(w->added, 150.0);
    CHECK_STR(roast_intern_get(roast_agg_strings(agg), w->incarnation), "Worker-1");
    CHECK_EQ_U(w->payloads, 1);
    CHECK_EQ_U(w->payload_bytes, buf.len);

    roast_digest_key k;
    memset(&k, 0, sizeof k);
    k.worker = a;
    roast_intern *st = roast_agg_strings(agg);
    CHECK(roast_intern_find(st, "execute", 7, &k.context));
    CHECK(roast_intern_find(st, "span-1", 6, &k.span));
    CHECK(roast_intern_find(st, "inc", 3, &k.prefix));
    CHECK(roast_intern_find(st, "thread-cpu", 10, &k.activity));
    CHECK(roast_intern_find(st, "seconds", 7, &k.unit));
    double v = 0;
    CHECK(roast_agg_digest(agg, &k, &v));
    CHECK_EQ_D(v, 0.125);

    /* the same beat read again is stale: nothing changes */
    CHECK(roast_agg_ingest_payload(agg, a, 151.0, buf.data, buf.len, &flush, err, sizeof err) == ROAST_OK);
    CHECK(!flush);
    CHECK_EQ_U(roast_agg_worker(agg, a)->payloads, 1);

    /* contiguous, then a gap that asks for a flush */
    sample_payload(&buf, "Worker-1", 2, 1, false);
    CHECK(roast_agg_ingest_payload(agg, a, 152.0, buf.data, buf.len, &flush, err, sizeof err) == ROAST_OK);
    CHECK(!flush);
    sample_payload(&buf, "Worker-1", 9, 5, false);
    CHECK(roast_agg_ingest_payload(agg, a, 153.0, buf.data, buf.len, &flush, err, sizeof err) == ROAST_OK);
    CHECK(flush);
    CHECK_EQ_U(roast_agg_worker(agg, a)->gaps, 1);
    sample_payload(&buf, "Worker-1", 10, 0, true);
    CHECK(roast_agg_ingest_payload(agg, a, 154.0, buf.data, buf.len, &flush, err, sizeof err) == ROAST_OK);
    CHECK(!flush);
    CHECK_EQ_U(roast_agg_worker(agg, a)->flushes, 1);

    /* malformed: counted, and nothing changes */
    roast_agg_counters before = *roast_agg_counters_get(agg);
    char *bad = exact_copy(buf.data, buf.len - 1);
    CHECK(roast_agg_ingest_payload(agg, a, 155.0, bad, buf.len - 1, &flush, err, sizeof err) == ROAST_EMALFORMED);
    free(bad);
    CHECK(strncmp(err, "payload: ", 9) == 0);
    CHECK_EQ_U(roast_agg_counters_get(agg)->payload_errors, 1);
    CHECK_EQ_U(roast_agg_counters_get(agg)->payloads, before.payloads);
    CHECK_EQ_U(roast_agg_worker(agg, a)->last_seq, 10);

    /* a restarted process: values add to the old ones */
    sample_payload(&buf, "Worker-2", 1, 0, false);
    CHECK(roast_agg_ingest_payload(agg, a, 160.0, buf.data, buf.len, &flush, err, sizeof err) == ROAST_OK);
    CHECK(!flush);
    CHECK_EQ_U(roast_agg_worker(agg, a)->restarts, 1);
    CHECK(roast_agg_digest(agg, &k, &v));
    CHECK_EQ_D(v, 0.25);
    CHECK_EQ_U(roast_agg_counters_get(agg)->payloads, 5);
    roast_buf_free(&buf);
    roast_agg_free(agg);
}

static void test_ingest_refused_at_worker_cap(void)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.max_workers = 1;
    roast_agg *agg = roast_agg_new(&lim, 0.0);
    roast_id a = put(agg, "tcp://a"), b = put(agg, "tcp://b");
    roast_buf buf = {0};
    bool flush;
    sample_payload(&buf, "W", 1, 0, false);
    CHECK(roast_agg_ingest_payload(agg, a, 1.0, buf.data, buf.len, &flush, NULL, 0) == ROAST_OK);
    CHECK(roast_agg_ingest_payload(agg, b, 1.0, buf.data, buf.len, &flush, NULL, 0) == ROAST_EFULL);
    CHECK(roast_agg_worker(agg, b) == NULL);
    CHECK_EQ_U(roast_agg_counters_get(agg)->rows_refused, 1);
    CHECK_EQ_U(roast_agg_counters_get(agg)->payloads, 1);
    roast_buf_free(&buf);
    roast_agg_free(agg);
}

/* ---- snapshot ---------------------------------------------------------- */

static void sample_worker(roast_agg *agg, roast_id w, double t, double scale)
{
    roast_sample s;
    s.time = t;
    for (int c = 0; c < ROAST_NCOLS; c++)
        s.v[c] = scale * (c + 1) + t * 0.001;
    s.v[ROAST_COL_SPILLED] = NAN;
    s.v[ROAST_COL_LAST_SEEN] = t - 0.25;
    CHECK(roast_series_append(roast_agg_series(agg), w, &s) == ROAST_OK);
}

/* An aggregator with something in every table. */
static roast_agg *rich_agg(size_t series_cap, int samples)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.series_cap_bytes = series_cap;
    lim.record_cap_bytes = 1 << 20;
    roast_agg *agg = roast_agg_new(&lim, 1000.0);
    roast_id a = put(agg, "tcp://a:1"), b = put(agg, "tcp://b:2");
    roast_id s1 = put(agg, "span-1"), s2 = put(agg, "span-2"), s3 = put(agg, "span-3");
    put(agg, "unused string");
    CHECK(roast_agg_worker_seen(agg, a, put(agg, "alpha"), 1000.5) == ROAST_OK);
    CHECK(roast_agg_worker_seen(agg, b, ROAST_ID_EMPTY, 1001.0) == ROAST_OK);
    CHECK(roast_agg_worker_removed(agg, b, 1500.125) == ROAST_OK);
    roast_buf buf = {0};
    bool flush;
    sample_payload(&buf, "Worker-1", 1, 0, false);
    CHECK(roast_agg_ingest_payload(agg, a, 1010.0, buf.data, buf.len, &flush, NULL, 0) == ROAST_OK);
    sample_payload(&buf, "Worker-2", 4, 2, false);
    CHECK(roast_agg_ingest_payload(agg, b, 1011.0, buf.data, buf.len, &flush, NULL, 0) == ROAST_OK);
    roast_buf_free(&buf);
    static const roast_str records[] = {{"\x81\xa1k\x01", 4}, {"", 0}, {"with\0nul", 8}};
    for (size_t i = 0; i < 6; i++)
        CHECK(roast_agg_add_sent_record(agg, i < 3 ? a : b, i % 2 ? s1 : s2, 1010.0 + (double)i,
                                        records[i % 3].ptr, records[i % 3].len) == ROAST_OK);
    roast_digest_key k = {a, put(agg, "execute"), s3, put(agg, "x"), put(agg, "nan-act"), 0};
    CHECK(roast_agg_set_digest(agg, &k, 0, NAN) == ROAST_OK);

    roast_event ev;
    memset(&ev, 0, sizeof ev);
    roast_id prefixes[3] = {put(agg, "load"), put(agg, "process"), put(agg, "\xe2\x9c\x93")};
    roast_id spans[3] = {s1, s2, ROAST_ID_EMPTY};
    for (int i = 0; i < 30; i++) {
        ev.worker = i % 3 == 2 ? ROAST_ID_EMPTY : (i % 2 ? a : b);
        ev.span = spans[i % 3];
        ev.prefix = prefixes[(i / 3) % 3];
        ev.from = ROAST_STATE_PROCESSING;
        ev.to = i % 7 == 0 ? ROAST_STATE_ERRED : ROAST_STATE_MEMORY;
        ev.start = 1000.0 + i * 0.1;
        ev.stop = ev.start + 0.0123 * i;
        ev.compute_seconds = ev.stop - ev.start;
        ev.transfer_seconds = 1.0 / (i + 3);
        ev.nbytes = (uint64_t)i << 33;
        CHECK(roast_agg_apply(agg, &ev) == ROAST_OK);
    }
    CHECK(roast_agg_set_span(agg, s1, ROAST_ID_EMPTY, put(agg, "default")) == ROAST_OK);
    CHECK(roast_agg_set_span(agg, s2, s1, put(agg, "default\x1f" "inner")) == ROAST_OK);
    CHECK(roast_agg_set_span(agg, s3, ROAST_ID_EMPTY, put(agg, "other")) == ROAST_OK);
    CHECK(roast_agg_count_error(agg, "sample", 6, 3) == ROAST_OK);
    CHECK(roast_agg_count_error(agg, "ingest", 6, 1) == ROAST_OK);
    for (int i = 0; i < samples; i++) {
        sample_worker(agg, a, 1001.0 + i * 0.5, 1.1);
        if (i % 2)
            sample_worker(agg, b, 1001.0 + i * 0.5, 2.2);
    }
    roast_agg_counters *c = roast_agg_counters_mut(agg);
    c->hook_calls = 123456789;
    c->hook_errors = 2;
    c->dropped_events = 5;
    c->hook_ns_per_call = 312.5;
    return agg;
}

static roast_agg *decode_ok(const roast_buf *buf, double *taken_at)
{
    char *data = exact_copy(buf->data, buf->len);
    roast_agg *out = NULL;
    char err[256] = "";
    roast_status st = roast_wire_decode_snapshot(data, buf->len, &out, taken_at, err, sizeof err);
    if (st != ROAST_OK)
        fprintf(stderr, "decode: %s: %s\n", roast_status_str(st), err);
    CHECK(st == ROAST_OK);
    free(data);
    return out;
}

static void check_round_trip(const roast_agg *agg)
{
    roast_buf buf = {0}, again = {0};
    CHECK(roast_wire_encode_snapshot(agg, NULL, 2000.25, &buf) == ROAST_OK);
    double taken = 0;
    roast_agg *copy = decode_ok(&buf, &taken);
    if (!copy)
        return;
    CHECK_EQ_D(taken, 2000.25);
    char *want = dump_agg(agg), *got = dump_agg(copy);
    CHECK(strcmp(want, got) == 0);
    if (strcmp(want, got) != 0)
        fprintf(stderr, "--- want\n%s--- got\n%s", want, got);
    /* canonical: the copy encodes to the same bytes */
    CHECK(roast_wire_encode_snapshot(copy, NULL, 2000.25, &again) == ROAST_OK);
    CHECK(again.len == buf.len && memcmp(again.data, buf.data, buf.len) == 0);
    free(want);
    free(got);
    roast_buf_free(&buf);
    roast_buf_free(&again);
    roast_agg_free(copy);
}

static void test_snapshot_round_trip(void)
{
    roast_agg *agg = rich_agg(1 << 20, 40);
    CHECK_EQ_U(roast_series_folds(roast_agg_series_const(agg)), 0);
    check_round_trip(agg);
    roast_agg_free(agg);

    roast_agg *empty = roast_agg_new(NULL, 0.0);
    check_round_trip(empty);
    roast_agg_free(empty);
}

static void test_snapshot_round_trip_with_buckets(void)
{
    /* a small series cap forces folding: buckets and raw samples mixed */
    roast_agg *agg = rich_agg(64 << 10, 4000);
    CHECK(roast_series_folds(roast_agg_series_const(agg)) > 0);
    check_round_trip(agg);
    roast_agg_free(agg);
}

static int count_task(void *ctx, const roast_task_key *k, const roast_task_stats *s)
{
    (void)k;
    (void)s;
    ++*(int *)ctx;
    return 0;
}

static int count_digest(void *ctx, const roast_digest_key *k, double v)
{
    (void)k;
    (void)v;
    ++*(int *)ctx;
    return 0;
}

typedef struct span_check {
    const roast_agg *agg;
    const char *want;
    int bad, n;
} span_check;

static bool id_is(const roast_agg *agg, roast_id id, const char *want)
{
    roast_str s = roast_intern_get(roast_agg_strings_const(agg), id);
    return s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

/* Counts a row, and a row of another span than the one wanted. */
static int span_seen(void *ctx, roast_id span)
{
    span_check *c = ctx;
    c->n++;
    c->bad += !id_is(c->agg, span, c->want);
    return 0;
}

static int check_task_span(void *ctx, const roast_task_key *k, const roast_task_stats *s)
{
    (void)s;
    return span_seen(ctx, k->span);
}

static int check_digest_span(void *ctx, const roast_digest_key *k, double v)
{
    (void)v;
    return span_seen(ctx, k->span);
}

static int check_span_row(void *ctx, const roast_span_info *info)
{
    return span_seen(ctx, info->span);
}

static int count_worker(void *ctx, const roast_worker_info *w)
{
    (void)w;
    ++*(int *)ctx;
    return 0;
}

static int check_record_span(void *ctx, const roast_record *r)
{
    return span_seen(ctx, r->span);
}

static void test_snapshot_filter_spans(void)
{
    roast_agg *agg = rich_agg(1 << 20, 10);
    roast_id s2;
    CHECK(roast_intern_find(roast_agg_strings(agg), "span-2", 6, &s2));
    roast_snapshot_filter f = {&s2, 1, 0.0, 0.0};
    roast_buf buf = {0};
    CHECK(roast_wire_encode_snapshot(agg, &f, 5.0, &buf) == ROAST_OK);
    roast_agg *copy = decode_ok(&buf, NULL);
    if (copy) {
        span_check c = {copy, "span-2", 0, 0};
        roast_agg_each_task(copy, check_task_span, &c);
        CHECK(c.n == 6 && c.bad == 0); /* 2 workers x 3 prefixes */
        c.n = 0;
        roast_agg_each_digest(copy, check_digest_span, &c);
        CHECK(c.n == 8 && c.bad == 0); /* 4 span-2 digests from each of 2 workers */
        c.n = 0;
        roast_agg_each_span(copy, check_span_row, &c);
        CHECK(c.n == 1 && c.bad == 0);
        c.n = 0;
        roast_agg_each_record(copy, check_record_span, &c);
        CHECK(c.n == 3 && c.bad == 0); /* records 0, 2 and 4 were made in span-2 */
        int nw = 0;
        roast_agg_each_worker(copy, count_worker, &nw);
        CHECK_EQ_U(nw, 2);
        roast_task_stats want, got;
        roast_task_key m = {ROAST_AGG_ANY, s2, ROAST_AGG_ANY};
        roast_agg_sum_tasks(agg, &m, &want);
        roast_id s2c;
        CHECK(roast_intern_find(roast_agg_strings(copy), "span-2", 6, &s2c));
        m.span = s2c;
        roast_agg_sum_tasks(copy, &m, &got);
        CHECK(memcmp(&want, &got, sizeof want) == 0);
        roast_agg_free(copy);
    }
    /* an empty list keeps no span rows at all */
    f.nspans = 0;
    buf.len = 0;
    CHECK(roast_wire_encode_snapshot(agg, &f, 5.0, &buf) == ROAST_OK);
    copy = decode_ok(&buf, NULL);
    if (copy) {
        int nt = 0, nd = 0;
        roast_agg_each_task(copy, count_task, &nt);
        roast_agg_each_digest(copy, count_digest, &nd);
        CHECK(nt == 0 && nd == 0);
        span_check none = {copy, "", 0, 0};
        roast_agg_each_record(copy, check_record_span, &none);
        CHECK_EQ_U(none.n, 0);
        roast_agg_free(copy);
    }
    roast_buf_free(&buf);
    roast_agg_free(agg);
}

static size_t points_overlapping(const roast_agg *agg, double t_from, double t_to, bool check)
{
    const roast_series *s = roast_agg_series_const(agg);
    roast_id w[8];
    size_t nw = roast_series_workers(s, w, 8), kept = 0;
    for (size_t i = 0; i < nw; i++) {
        for (size_t j = 0; j < roast_series_points(s, w[i]); j++) {
            roast_series_point p;
            roast_series_point_at(s, w[i], j, &p);
            bool in = p.t_last >= t_from && (t_to == 0 || p.t_first <= t_to);
            if (check)
                CHECK(in);
            kept += in;
        }
    }
    return kept;
}

static void test_snapshot_filter_time(void)
{
    roast_agg *agg = rich_agg(64 << 10, 3000); /* buckets too */
    struct {
        double from, to;
    } windows[] = {{1100.0, 1200.0}, {1500.0, 0.0}, {0.0, 1001.2}, {5000.0, 0.0}};
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
        roast_snapshot_filter f = {NULL, 0, windows[i].from, windows[i].to};
        roast_buf buf = {0};
        CHECK(roast_wire_encode_snapshot(agg, &f, 5.0, &buf) == ROAST_OK);
        roast_agg *copy = decode_ok(&buf, NULL);
        if (copy) {
            size_t want = points_overlapping(agg, f.t_from, f.t_to, false);
            CHECK_EQ_U(points_overlapping(copy, f.t_from, f.t_to, true), want);
            int nt = 0, want_nt = 0;
            roast_agg_each_task(copy, count_task, &nt);
            roast_agg_each_task(agg, count_task, &want_nt);
            CHECK_EQ_U(nt, want_nt); /* tables are not filtered by time */
            if (windows[i].from == 5000.0)
                CHECK_EQ_U(roast_series_workers(roast_agg_series_const(copy), NULL, 0), 0);
            roast_agg_free(copy);
        }
        roast_buf_free(&buf);
    }
    roast_agg_free(agg);
}

static void expect_malformed_snapshot(const char *data, size_t len, const char *expect)
{
    roast_agg *out = (roast_agg *)1;
    char err[256] = "";
    roast_status st = roast_wire_decode_snapshot(data, len, &out, NULL, err, sizeof err);
    CHECK(st == ROAST_EMALFORMED);
    CHECK(out == NULL);
    CHECK_CONTAINS(err, expect);
}

static void test_snapshot_truncated_everywhere(void)
{
    roast_agg *agg = rich_agg(1 << 20, 3);
    roast_buf buf = {0};
    CHECK(roast_wire_encode_snapshot(agg, NULL, 1.0, &buf) == ROAST_OK);
    for (size_t n = 0; n < buf.len; n++) {
        char *part = exact_copy(buf.data, n);
        expect_malformed_snapshot(part, n, "snapshot: ");
        free(part);
    }
    roast_buf_free(&buf);
    roast_agg_free(agg);
}

static void snapshot_mutate(int which, msgpack_object *top)
{
    msgpack_object *tasks = get_key(top, "tasks");
    msgpack_object *series = get_key(top, "series");
    msgpack_object *points = &series->via.map.ptr[0].val;
    switch (which) {
    case 0: *get_key(top, "v") = obj_uint(7); break;
    case 1: drop_key(top, "series"); break;
    case 2: *at(get_key(top, "strings"), 1) = obj_uint(1); break;
    case 3: at(tasks, 0)->via.array.size = 10; break;
    case 4: *at(at(tasks, 1), 2) = obj_uint(100000); break;
    case 5: *at(at(tasks, 0), 3) = obj_int(-1); break;
    case 6: *at(at(get_key(top, "workers"), 1), 3) = obj_uint(1ull << 32); break;
    case 7: at(points, 0)->via.array.size = 14; break;
    case 8: *at(at(points, 1), 0) = obj_float(1.0); break; /* before the epoch */
    case 9: series->via.map.ptr[0].key = obj_str("tcp://a:1"); break;
    case 10: *get_key(get_key(top, "limits"), "max_workers") = obj_uint(1); break;
    case 11: *get_key(get_key(top, "limits"), "series_cap_bytes") = obj_uint(100); break;
    case 12: *get_key(top, "series_epoch") = obj_float(999.0); break;
    case 13: drop_key(get_key(top, "counters"), "rows_refused"); break;
    case 14: *get_key(get_key(top, "counters"), "hook_ns_per_call") = obj_str("fast"); break;
    case 15: *at(at(get_key(top, "records"), 0), 4) = obj_float(1.0); break;
    case 16: *get_key(top, "digests") = obj_uint(3); break;
    case 17: *at(at(get_key(top, "digests"), 0), 6) = obj_str("1"); break;
    case 18: *get_key(top, "taken_at") = obj_str("now"); break;
    case 19: *get_key(get_key(top, "limits"), "max_strings") = obj_uint(3); break;
    case 20: *at(at(get_key(top, "errors"), 0), 1) = obj_float(2.0); break;
    case 21: *at(at(get_key(top, "spans"), 0), 0) = obj_str("span-1"); break;
    case 22: *points = obj_uint(1); break;
    case 23: *get_key(top, "v") = obj_uint(0); break;
    case 24: *get_key(get_key(top, "limits"), "max_spans") = obj_uint(1ull << 33); break;
    default: break;
    }
}

static void test_snapshot_malformed(void)
{
    static const char *expect[] = {
        "snapshot: version 7 is newer than this build's version 3",
        "snapshot: missing key \"series\"",
        "snapshot.strings[1]: expected a string",
        "snapshot.tasks[0]: expected an array of 11",
        "snapshot.tasks[1][2]: expected a string index",
        "snapshot.tasks[0][3]: expected an unsigned integer",
        "snapshot.workers[1][3]: expected an unsigned 32-bit integer",
        "snapshot.series[\"tcp://a:1\"][0]: expected an array of 19 or 57",
        "snapshot.series[\"tcp://a:1\"][1]: refused by the series store",
        "snapshot.series: key 0 is not a string index",
        "snapshot.workers[1]: beyond the snapshot's own limits",
        "snapshot.limits.series_cap_bytes: below the minimum of 65536",
        "snapshot.series_epoch: differs from started",
        "snapshot.counters: missing key \"rows_refused\"",
        "snapshot.counters.hook_ns_per_call: expected a number",
        "snapshot.records[0][4]: expected bytes",
        "snapshot.digests: expected an array",
        "snapshot.digests[0][6]: expected a number",
        "snapshot.taken_at: expected a number",
        "snapshot.strings: more than limits.max_strings",
        "snapshot.errors[0][1]: expected an unsigned integer",
        "snapshot.spans[0][0]: expected a string index",
        "snapshot.series[\"tcp://a:1\"]: expected an array",
        "snapshot: unknown version 0",
        "snapshot.limits.max_spans: expected an unsigned integer up to 4294967295",
    };
    roast_agg *agg = rich_agg(1 << 20, 4);
    roast_buf buf = {0};
    CHECK(roast_wire_encode_snapshot(agg, NULL, 1.0, &buf) == ROAST_OK);
    for (int i = 0; i < (int)(sizeof expect / sizeof expect[0]); i++) {
        size_t len;
        char *bad = mutated(&buf, snapshot_mutate, i, &len);
        expect_malformed_snapshot(bad, len, expect[i]);
        free(bad);
    }
    /* the unmutated tree packs back to a decodable snapshot */
    size_t len;
    char *same = mutated(&buf, snapshot_mutate, -1, &len);
    roast_agg *out = NULL;
    CHECK(roast_wire_decode_snapshot(same, len, &out, NULL, NULL, 0) == ROAST_OK);
    roast_agg_free(out);
    free(same);
    roast_buf_free(&buf);
    roast_agg_free(agg);
}

/* A version 2 point, from a version 3 one: its 14 columns (the node's four left out). */
static void to_v2_point(msgpack_object *point)
{
    msgpack_object *v = point->via.array.ptr;
    uint32_t head = point->via.array.size == 1 + ROAST_NCOLS ? 1 : 3;
    uint32_t blocks = head == 1 ? 1 : 3, out = head;
    for (uint32_t k = 0; k < blocks; k++)
        for (int c = 0; c < ROAST_V2_NCOLS; c++)
            v[out++] = v[head + k * ROAST_NCOLS + roast_v2_columns[c]];
    point->via.array.size = out;
}

static void to_v2(int which, msgpack_object *top)
{
    (void)which;
    *get_key(top, "v") = obj_uint(2);
    msgpack_object *series = get_key(top, "series");
    for (uint32_t w = 0; w < series->via.map.size; w++) {
        msgpack_object *points = &series->via.map.ptr[w].val;
        for (uint32_t i = 0; i < points->via.array.size; i++)
            to_v2_point(at(points, i));
    }
}

/* A version 2 snapshot still reads: its columns where they were, the node's NaN. */
static void test_snapshot_of_version_2_reads_its_columns(void)
{
    roast_agg *agg = rich_agg(1 << 20, 4);
    roast_buf buf = {0};
    CHECK(roast_wire_encode_snapshot(agg, NULL, 1.0, &buf) == ROAST_OK);
    size_t len;
    char *old = mutated(&buf, to_v2, 0, &len);
    roast_agg *back = NULL, *now = NULL;
    CHECK(roast_wire_decode_snapshot(old, len, &back, NULL, NULL, 0) == ROAST_OK);
    CHECK(roast_wire_decode_snapshot(buf.data, buf.len, &now, NULL, NULL, 0) == ROAST_OK);
    const roast_series *a = roast_agg_series_const(now), *b = roast_agg_series_const(back);
    roast_id ids[8];
    size_t n = roast_series_workers(a, ids, 8);
    CHECK(n > 0 && n == roast_series_workers(b, NULL, 0));
    for (size_t w = 0; w < n; w++) {
        CHECK_EQ_U(roast_series_points(b, ids[w]), roast_series_points(a, ids[w]));
        for (size_t i = 0; i < roast_series_points(a, ids[w]); i++) {
            roast_series_point p, q;
            roast_series_point_at(a, ids[w], i, &p);
            roast_series_point_at(b, ids[w], i, &q);
            for (int c = 0; c < ROAST_V2_NCOLS; c++) {
                int col = roast_v2_columns[c];
                CHECK(same_bits(q.mean[col], p.mean[col]));
                CHECK(same_bits(q.max[col], p.max[col]));
            }
            CHECK(isnan(q.mean[ROAST_COL_NODE_RUNNABLE]) && isnan(q.max[ROAST_COL_NODE_STEAL]));
        }
    }
    roast_agg_free(now);
    roast_agg_free(back);
    free(old);
    roast_buf_free(&buf);
    roast_agg_free(agg);
}

static void test_snapshot_filter_invalid(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    roast_buf buf = {0};
    roast_snapshot_filter f = {NULL, 3, 0, 0};
    CHECK(roast_wire_encode_snapshot(agg, &f, 0, &buf) == ROAST_EINVAL);
    CHECK_EQ_U(buf.len, 0);
    roast_agg_free(agg);
}

int main(void)
{
    RUN(test_payload_round_trip);
    RUN(test_payload_accepts_int_float_str_and_extra_keys);
    RUN(test_payload_truncated_everywhere);
    RUN(test_payload_wrong_types_and_missing_keys);
    RUN(test_payload_hostile_lengths);
    RUN(test_ingest);
    RUN(test_ingest_refused_at_worker_cap);
    RUN(test_snapshot_round_trip);
    RUN(test_snapshot_round_trip_with_buckets);
    RUN(test_snapshot_filter_spans);
    RUN(test_snapshot_filter_time);
    RUN(test_snapshot_truncated_everywhere);
    RUN(test_snapshot_malformed);
    RUN(test_snapshot_filter_invalid);
    RUN(test_snapshot_of_version_2_reads_its_columns);
    return CHECK_DONE();
}
