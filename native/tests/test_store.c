#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <cjson/cJSON.h>
#include <errno.h>
#include <unistd.h>

#include "agg_dump.h"
#include "check.h"
#include "roast/store.h"

static roast_id put(roast_agg *agg, const char *s, size_t len)
{
    roast_id id = 0;
    CHECK(roast_intern_put(roast_agg_strings(agg), s, len, &id) == ROAST_OK);
    return id;
}

#define PUT(agg, lit) put((agg), (lit), sizeof(lit) - 1)

static double bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* Doubles that cJSON's own printer would not keep, non-finite values,
 * counters above 2^53, strings that are not plain UTF-8. */
static roast_agg *tricky_agg(size_t series_cap, int samples)
{
    roast_agg_limits lim;
    roast_agg_limits_default(&lim);
    lim.series_cap_bytes = series_cap;
    lim.max_digest_rows = 4000000000u;
    roast_agg *agg = roast_agg_new(&lim, 1700000000.123456);
    roast_id a = PUT(agg, "tcp://a:1"), b = PUT(agg, "nul\0inside"), c = PUT(agg, "bad\xff\xfeutf8");
    roast_id uni = PUT(agg, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \"quoted\" \\ \n\t");
    CHECK(roast_agg_worker_seen(agg, a, uni, 1700000001.5) == ROAST_OK);
    CHECK(roast_agg_worker_seen(agg, b, c, 0.1 + 0.2) == ROAST_OK);
    roast_worker_info w = *roast_agg_worker(agg, b);
    w.payloads = UINT64_MAX;
    w.payload_bytes = (1ull << 53) + 1;
    w.last_seq = 1ull << 53;
    w.removed = -0.0;
    CHECK(roast_agg_restore_worker(agg, &w) == ROAST_OK);

    double values[] = {0.1 + 0.2, -0.0, NAN, -NAN, INFINITY, -INFINITY, 5e-324, 1.7976931348623157e308,
                       1.0 / 3.0, 123456789.123456789, -1e-300, bits(0x3fb999999999999aull + 1)};
    roast_id act = PUT(agg, "act"), unit = PUT(agg, "seconds");
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char ctx[16];
        int n = snprintf(ctx, sizeof ctx, "ctx-%zu", i);
        roast_digest_key k = {i % 2 ? a : b, put(agg, ctx, (size_t)n), c, uni, act, unit};
        CHECK(roast_agg_set_digest(agg, &k, PUT(agg, "inc"), values[i]) == ROAST_OK);
    }
    roast_task_key tk = {a, c, uni};
    roast_task_stats ts = {UINT64_MAX, (1ull << 53) - 1, 1ull << 53, 0.1 + 0.2, NAN,
                           (1ull << 60) + 3, 1700000000.000001, INFINITY};
    CHECK(roast_agg_restore_task(agg, &tk, &ts) == ROAST_OK);
    roast_task_key tk2 = {ROAST_ID_EMPTY, ROAST_ID_EMPTY, a};
    roast_task_stats ts2 = {1, 1, 0, 0, 0, 0, 0, 0};
    CHECK(roast_agg_restore_task(agg, &tk2, &ts2) == ROAST_OK);
    CHECK(roast_agg_set_span(agg, c, ROAST_ID_EMPTY, b) == ROAST_OK);
    CHECK(roast_agg_set_span(agg, uni, c, PUT(agg, "name\x1f" "child")) == ROAST_OK);
    CHECK(roast_agg_restore_record(agg, a, c, 1, 1700000002.25, "\0\1\2\3\xff", 5) == ROAST_OK);
    CHECK(roast_agg_restore_record(agg, a, ROAST_ID_EMPTY, 2, 1700000002.5, "", 0) == ROAST_OK);
    CHECK(roast_agg_add_sent_record(agg, b, uni, 0.1 + 0.2, "ab", 2) == ROAST_OK);
    CHECK(roast_agg_count_error(agg, "bad\xffname", 8, UINT64_MAX - 1) == ROAST_OK);
    CHECK(roast_agg_count_error(agg, "sample", 6, 1) == ROAST_OK);
    for (int i = 0; i < samples; i++) {
        roast_sample s;
        s.time = 1700000000.5 + i * 0.25;
        for (int col = 0; col < ROAST_NCOLS; col++)
            s.v[col] = (col + 1) * 1.1 + i * 0.01;
        s.v[ROAST_COL_CPU] = i % 5 ? NAN : 50.0;
        s.v[ROAST_COL_LAST_SEEN] = s.time - 0.125;
        CHECK(roast_series_append(roast_agg_series(agg), i % 3 ? a : c, &s) == ROAST_OK);
    }
    roast_agg_counters *cn = roast_agg_counters_mut(agg);
    cn->events = UINT64_MAX;
    cn->hook_calls = (1ull << 53) + 1;
    cn->hook_ns_per_call = NAN;
    cn->rows_refused = 1ull << 53;
    return agg;
}

static bool same_content(const roast_agg *x, const roast_agg *y)
{
    char *a = dump_agg(x), *b = dump_agg(y);
    bool same = strcmp(a, b) == 0;
    if (!same)
        fprintf(stderr, "--- want\n%s--- got\n%s", a, b);
    free(a);
    free(b);
    return same;
}

static roast_agg *from_text(const char *text)
{
    roast_agg *out = NULL;
    char err[512] = "";
    roast_status st = roast_store_from_json(text, strlen(text), &out, err, sizeof err);
    if (st != ROAST_OK)
        fprintf(stderr, "from_json: %s: %s\n", roast_status_str(st), err);
    CHECK(st == ROAST_OK);
    return out;
}

static void test_round_trip_exact(void)
{
    roast_agg *agg = tricky_agg(1 << 20, 50);
    char *text = roast_store_to_json(agg);
    CHECK(text != NULL);
    roast_agg *copy = from_text(text);
    if (copy) {
        CHECK(same_content(agg, copy));
        char *again = roast_store_to_json(copy);
        CHECK(strcmp(text, again) == 0); /* canonical text */
        free(again);

        roast_id a, b;
        CHECK(roast_intern_find(roast_agg_strings(copy), "tcp://a:1", 9, &a));
        CHECK(roast_intern_find(roast_agg_strings(copy), "nul\0inside", 10, &b));
        const roast_worker_info *w = roast_agg_worker(copy, b);
        CHECK(w && w->payloads == UINT64_MAX && w->payload_bytes == (1ull << 53) + 1);
        CHECK(w && w->removed == 0 && signbit(w->removed));
        CHECK(w && w->added == 0.1 + 0.2);
        roast_agg_report r;
        roast_agg_report_get(copy, &r);
        CHECK(r.counters.events == UINT64_MAX);
        CHECK(isnan(r.counters.hook_ns_per_call));
        roast_agg_free(copy);
    }
    /* what the text says, for people reading a state file */
    CHECK(strstr(text, "\"format\":\t\"roastcoffea-native-state\"") != NULL);
    CHECK(strstr(text, "\"18446744073709551615\"") != NULL);  /* above 2^53: a string */
    CHECK(strstr(text, "9007199254740992") != NULL);            /* 2^53: a number */
    CHECK(strstr(text, "\"9007199254740992\"") == NULL);
    CHECK(strstr(text, "0.30000000000000004") != NULL);
    CHECK(strstr(text, "\"-nan\"") && strstr(text, "\"nan\"") && strstr(text, "\"-inf\"") &&
          strstr(text, "\"inf\""));
    CHECK(strstr(text, "{\n") != NULL);
    CHECK(strstr(text, "\"base64\"") != NULL);
    CHECK(strstr(text, "caf\xc3\xa9") != NULL); /* plain UTF-8 stays readable */
    free(text);
    roast_agg_free(agg);
}

static void test_round_trip_buckets_and_nan_signs(void)
{
    roast_agg *agg = tricky_agg(64 << 10, 5000);
    CHECK(roast_series_folds(roast_agg_series_const(agg)) > 0);
    char *text = roast_store_to_json(agg);
    roast_agg *copy = text ? from_text(text) : NULL;
    if (copy) {
        CHECK(same_content(agg, copy));
        roast_digest_key k;
        memset(&k, 0, sizeof k);
        roast_intern *s = roast_agg_strings(copy);
        CHECK(roast_intern_find(s, "nul\0inside", 10, &k.worker));
        CHECK(roast_intern_find(s, "ctx-2", 5, &k.context));
        CHECK(roast_intern_find(s, "bad\xff\xfeutf8", 9, &k.span));
        static const char uni[] = "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \"quoted\" \\ \n\t";
        CHECK(roast_intern_find(s, uni, sizeof uni - 1, &k.prefix));
        CHECK(roast_intern_find(s, "act", 3, &k.activity));
        CHECK(roast_intern_find(s, "seconds", 7, &k.unit));
        double v = 0;
        CHECK(roast_agg_digest(copy, &k, &v));
        CHECK(isnan(v) && !signbit(v));
        k.worker = 0;
        CHECK(roast_intern_find(s, "tcp://a:1", 9, &k.worker));
        CHECK(roast_intern_find(s, "ctx-3", 5, &k.context));
        CHECK(roast_agg_digest(copy, &k, &v));
        CHECK(isnan(v) && signbit(v));
        roast_agg_free(copy);
    }
    free(text);
    roast_agg_free(agg);
}

static void test_empty_agg(void)
{
    roast_agg *agg = roast_agg_new(NULL, 0);
    char *text = roast_store_to_json(agg);
    roast_agg *copy = from_text(text);
    if (copy) {
        CHECK(same_content(agg, copy));
        roast_agg_free(copy);
    }
    free(text);
    roast_agg_free(agg);
}

static void test_files(void)
{
    char dir[] = "/tmp/roast_store_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/state.json", dir);
    roast_agg *agg = tricky_agg(1 << 20, 20);
    CHECK(roast_store_write(agg, path, err, sizeof err) == ROAST_OK);
    roast_agg *back = NULL;
    CHECK(roast_store_read(path, &back, err, sizeof err) == ROAST_OK);
    CHECK(back && same_content(agg, back));
    roast_agg_free(back);

    /* errors name the path and the system's reason */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/dir/state.json", dir);
    CHECK(roast_store_write(agg, missing, err, sizeof err) == ROAST_EIO);
    CHECK(strstr(err, missing) && strstr(err, strerror(ENOENT)));
    back = (roast_agg *)1;
    CHECK(roast_store_read(missing, &back, err, sizeof err) == ROAST_EIO);
    CHECK(back == NULL);
    CHECK(strstr(err, missing) && strstr(err, strerror(ENOENT)));
    CHECK(roast_store_read(dir, &back, err, sizeof err) == ROAST_EIO);
    CHECK(strstr(err, dir) && strstr(err, strerror(EISDIR)));

    FILE *f = fopen(path, "w");
    fputs("{\"format\": \"roastcoffea-native-state\", \"version\": 2}", f);
    fclose(f);
    CHECK(roast_store_read(path, &back, err, sizeof err) == ROAST_EMALFORMED);
    CHECK(strstr(err, path) == err && strstr(err, "state: missing key \"started\""));
    remove(path);
    rmdir(dir);
    roast_agg_free(agg);
}

static void expect_refused(const char *text, const char *expect)
{
    roast_agg *out = (roast_agg *)1;
    char err[512] = "";
    CHECK(roast_store_from_json(text, strlen(text), &out, err, sizeof err) == ROAST_EMALFORMED);
    CHECK(out == NULL);
    CHECK_CONTAINS(err, expect);
}

static cJSON *path(cJSON *doc, const char *key, int i, int j)
{
    cJSON *x = cJSON_GetObjectItemCaseSensitive(doc, key);
    if (i >= 0)
        x = cJSON_GetArrayItem(x, i);
    if (j >= 0)
        x = cJSON_GetArrayItem(x, j);
    return x;
}

static void replace(cJSON *doc, const char *key, int i, int j, cJSON *with)
{
    cJSON *parent = i < 0 ? doc : j < 0 ? path(doc, key, -1, -1) : path(doc, key, i, -1);
    if (i < 0)
        cJSON_ReplaceItemInObjectCaseSensitive(parent, key, with);
    else
        cJSON_ReplaceItemInArray(parent, j < 0 ? i : j, with);
}

static void mutate(int which, cJSON *doc)
{
    cJSON *limits = cJSON_GetObjectItemCaseSensitive(doc, "limits");
    cJSON *counters = cJSON_GetObjectItemCaseSensitive(doc, "counters");
    switch (which) {
    case 0: replace(doc, "format", -1, -1, cJSON_CreateString("other-format")); break;
    case 1: replace(doc, "version", -1, -1, cJSON_CreateNumber(4)); break;
    case 2: replace(doc, "version", -1, -1, cJSON_CreateTrue()); break;
    case 3: replace(doc, "tasks", -1, -1, cJSON_CreateObject()); break;
    case 4: replace(doc, "tasks", 0, 3, cJSON_CreateString("x")); break;
    case 5: replace(doc, "tasks", 0, 6, cJSON_CreateString("fast")); break;
    case 6: replace(doc, "workers", 0, 3, cJSON_CreateNumber(4294967296.0)); break;
    case 7: cJSON_DeleteItemFromObjectCaseSensitive(doc, "counters"); break;
    case 8: replace(limits, "max_spans", -1, -1, cJSON_CreateNumber(-1)); break;
    case 9: replace(doc, "tasks", 0, 4, cJSON_CreateNumber(1.5)); break;
    case 10: replace(doc, "tasks", 0, 4, cJSON_CreateString("12a")); break;
    case 11: replace(doc, "tasks", 0, 4, cJSON_CreateString("18446744073709551616")); break;
    case 12: replace(doc, "tasks", 0, 4, cJSON_CreateNumber(1e17)); break;
    case 13: cJSON_DeleteItemFromArray(path(doc, "tasks", 0, -1), 10); break;
    case 14: replace(doc, "records", 0, 4, cJSON_CreateString("not base64!")); break;
    case 15: replace(doc, "records", 0, 4, cJSON_CreateString("abc")); break;
    case 16: replace(doc, "digests", 0, 0, cJSON_CreateNumber(3)); break;
    case 17: {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "base64", "%%%%");
        replace(doc, "digests", 0, 0, o);
        break;
    }
    case 18: replace(doc, "series", 0, -1, cJSON_CreateNumber(0)); break;
    case 19: cJSON_DeleteItemFromArray(cJSON_GetArrayItem(path(doc, "series", 0, 1), 0), 3); break;
    case 20: cJSON_ReplaceItemInArray(cJSON_GetArrayItem(path(doc, "series", 0, 1), 1), 0,
                                      cJSON_CreateNumber(5.0)); break; /* before the epoch */
    case 21: replace(doc, "started", -1, -1, cJSON_CreateString("nan")); break;
    case 22: replace(doc, "series_epoch", -1, -1, cJSON_CreateNumber(1.0)); break;
    case 23: replace(counters, "hook_ns_per_call", -1, -1, cJSON_CreateString("NaN")); break;
    case 24: cJSON_AddItemToObject(doc, "tasks", cJSON_CreateArray()); break;
    case 25: replace(limits, "max_workers", -1, -1, cJSON_CreateNumber(1)); break;
    case 26: replace(limits, "series_cap_bytes", -1, -1, cJSON_CreateNumber(1000)); break;
    case 27: replace(limits, "max_strings", -1, -1, cJSON_CreateNumber(3)); break;
    case 28: replace(doc, "spans", 0, -1, cJSON_CreateArray()); break;
    case 29: replace(counters, "events", -1, -1, cJSON_CreateTrue()); break;
    default: break;
    }
}

static void test_refuses_wrong_documents(void)
{
    static const char *expect[] = {
        "state: not a roastcoffea-native-state document (\"format\" is other-format)",
        "state: version 4 is newer than this build's version 3",
        "state.version: expected an unsigned integer",
        "state.tasks: expected an array",
        "state.tasks[0][3]: expected an unsigned integer",
        "state.tasks[0][6]: expected a number, \"nan\"",
        "state.workers[0][3]: expected an unsigned 32-bit integer",
        "state: missing key \"counters\"",
        "state.limits.max_spans: expected an unsigned integer up to 4294967295",
        "state.tasks[0][4]: expected an unsigned integer",
        "state.tasks[0][4]: expected an unsigned integer",
        "state.tasks[0][4]: expected an unsigned integer",
        "state.tasks[0][4]: expected an unsigned integer (a string of digits above 2^53)",
        "state.tasks[0]: expected an array of 11",
        "state.records[0][4]: expected base64 text",
        "state.records[0][4]: expected base64 text",
        "state.digests[0][0]: expected a string",
        "state.digests[0][0]: expected a string",
        "state.series[0]: expected [worker, [point, ...]]",
        "state.series[0][1][0]: expected 19 or 57 numbers",
        "state.series[0][1][1]: refused by the series store",
        "state.started: expected a finite number",
        "state.series_epoch: expected a number equal to started",
        "state.counters.hook_ns_per_call: expected a number",
        "state: duplicate key \"tasks\"",
        "state.workers[1]: beyond the file's own limits",
        "state.limits.series_cap_bytes: below the minimum of 65536",
        "more strings than limits.max_strings",
        "state.spans[0]: expected an array of 3",
        "state.counters.events: expected an unsigned integer",
    };
    roast_agg *agg = tricky_agg(1 << 20, 6);
    char *text = roast_store_to_json(agg);
    for (int i = 0; i < (int)(sizeof expect / sizeof expect[0]); i++) {
        cJSON *doc = cJSON_Parse(text);
        mutate(i, doc);
        char *bad = cJSON_Print(doc);
        expect_refused(bad, expect[i]);
        free(bad);
        cJSON_Delete(doc);
    }
    expect_refused("", "state: not valid JSON (at byte 0)");
    expect_refused("{\"format\": ", "state: not valid JSON");
    expect_refused("[1, 2]", "state: not a roastcoffea-native-state document");
    expect_refused("{\"format\": \"roastcoffea-native-state\"}", "state.version: expected");
    size_t n = strlen(text);
    char *trailing = malloc(n + 3);
    memcpy(trailing, text, n);
    memcpy(trailing + n, " x", 3);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "state: trailing characters at byte %zu", n + 1);
    expect_refused(trailing, prefix);
    free(trailing);
    /* every truncation of a valid document is refused */
    for (size_t cut = 0; cut < n; cut += 7) {
        roast_agg *out = (roast_agg *)1;
        char *part = malloc(cut ? cut : 1);
        memcpy(part, text, cut);
        CHECK(roast_store_from_json(part, cut, &out, NULL, 0) == ROAST_EMALFORMED);
        CHECK(out == NULL);
        free(part);
    }
    free(text);
    roast_agg_free(agg);
}

/* A version 2 document, from a version 3 one: each point's 14 columns of then. */
static void to_v2_point(cJSON *point)
{
    int n = cJSON_GetArraySize(point), head = n == 1 + ROAST_NCOLS ? 1 : 3;
    int blocks = head == 1 ? 1 : 3;
    cJSON *kept = cJSON_CreateArray();
    for (int i = 0; i < head; i++)
        cJSON_AddItemToArray(kept, cJSON_Duplicate(cJSON_GetArrayItem(point, i), 1));
    for (int k = 0; k < blocks; k++)
        for (int c = 0; c < ROAST_V2_NCOLS; c++)
            cJSON_AddItemToArray(kept, cJSON_Duplicate(cJSON_GetArrayItem(
                                           point, head + k * ROAST_NCOLS + roast_v2_columns[c]), 1));
    while (cJSON_GetArraySize(point))
        cJSON_DeleteItemFromArray(point, 0);
    for (cJSON *v = kept->child; v; v = v->next)
        cJSON_AddItemToArray(point, cJSON_Duplicate(v, 1));
    cJSON_Delete(kept);
}

/* A version 2 state file still reads: its columns where they were, the node's NaN. */
static void test_version_2_reads_its_columns(void)
{
    roast_agg *agg = tricky_agg(64 << 10, 5000); /* single samples and buckets */
    char *text = roast_store_to_json(agg);
    cJSON *doc = cJSON_Parse(text);
    replace(doc, "version", -1, -1, cJSON_CreateNumber(2));
    for (cJSON *pair = cJSON_GetObjectItemCaseSensitive(doc, "series")->child; pair;
         pair = pair->next)
        for (cJSON *point = pair->child->next->child; point; point = point->next)
            to_v2_point(point);
    char *old = cJSON_Print(doc);
    /* printed by cJSON too (it rounds some doubles): the two differ only in version */
    cJSON *same = cJSON_Parse(text);
    char *reprinted = cJSON_Print(same);
    roast_agg *back = from_text(old), *now = from_text(reprinted);
    const roast_series *a = roast_agg_series_const(now), *b = roast_agg_series_const(back);
    roast_id ids[16];
    size_t n = roast_series_workers(a, ids, 16);
    CHECK(n > 0 && n == roast_series_workers(b, NULL, 0));
    for (size_t w = 0; w < n; w++)
        for (size_t i = 0; i < roast_series_points(a, ids[w]); i++) {
            roast_series_point p, q;
            roast_series_point_at(a, ids[w], i, &p);
            roast_series_point_at(b, ids[w], i, &q);
            for (int c = 0; c < ROAST_V2_NCOLS; c++) {
                int col = roast_v2_columns[c];
                CHECK(memcmp(&q.mean[col], &p.mean[col], sizeof(double)) == 0);
            }
            CHECK(isnan(q.min[ROAST_COL_NODE_CORES]) && isnan(q.mean[ROAST_COL_NODE_LOAD]));
        }
    roast_agg_free(back);
    roast_agg_free(now);
    free(old);
    free(reprinted);
    cJSON_Delete(same);
    cJSON_Delete(doc);
    free(text);
    roast_agg_free(agg);
}

int main(void)
{
    RUN(test_round_trip_exact);
    RUN(test_round_trip_buckets_and_nan_signs);
    RUN(test_empty_agg);
    RUN(test_files);
    RUN(test_refuses_wrong_documents);
    RUN(test_version_2_reads_its_columns);
    return CHECK_DONE();
}
