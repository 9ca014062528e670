/* store: the aggregator as a JSON document (cJSON), written and read back
 * exactly. The layout (also in docs/architecture.md, "State file layout"):
 *
 *   {"format": "roastcoffea-native-state", "version": 3 (2 is still read),
 *    "started": D, "series_epoch": D, "limits": {7 uint, as in the snapshot},
 *    "workers": [[S address, S name, S incarnation, U restarts, D added,
 *                 D removed, U payloads, U payload_bytes, U last_seq,
 *                 U gaps, U flushes], ...],
 *    "tasks":   [[S worker, S span, S prefix, U transitions, U tasks,
 *                 U erred, D compute_seconds, D transfer_seconds, U output_bytes,
 *                 D first_start, D last_stop], ...],
 *    "digests": [[S worker, S context, S span, S prefix, S activity, S unit,
 *                 D value], ...],
 *    "spans":   [[S span, S parent, S name], ...],
 *    "records": [[S worker, S span, U seq, D time, B data], ...],
 *    "errors":  [[S name, U count], ...],
 *    "counters": {the 17 snapshot counters; hook_ns_per_call is a D},
 *    "series":  [[S worker, [point, ...]], ...]}
 *
 * with points as in the snapshot ([t, v0..v13] or [t_first, t_last, U count,
 * min0..13, max0..13, mean0..13]) and
 *
 *   S  a JSON string, or {"base64": "..."} for a string that is not valid
 *      UTF-8 or contains NUL (cJSON strings are NUL-terminated);
 *   B  base64 text of the bytes (RFC 4648, with padding);
 *   D  a JSON number printed with the fewest digits (15 to 17) that read back
 *      to the same double, so doubles round-trip bit for bit (cJSON's own
 *      printer accepts a near miss at 15 digits, so numbers are written as
 *      raw text); NaN and infinities, which JSON lacks, are the strings
 *      "nan", "-nan", "inf" and "-inf" (a NaN keeps its sign, not its payload);
 *   U  a JSON integer up to 2^53, above that a string of decimal digits
 *      (a JSON number there would not be exact in cJSON's double); readers
 *      accept both forms.
 *
 * Unlike a snapshot, the state file is the whole aggregator (no filter) and
 * has no taken_at. Readers ignore unknown keys and refuse duplicate ones. */
#include "roast/store.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "roast/series.h"
#include "rows.h"

/* Integers a double holds exactly: up to 2^53. */
#define EXACT_UINT_MAX (UINT64_C(1) << 53)
#define EXACT_INT_MAX 9007199254740992.0

#define fail(err, errcap, ...) roast_fail(ROAST_EMALFORMED, err, errcap, __VA_ARGS__)

/* ---- base64 and UTF-8 ------------------------------------------------- */

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* A malloc'd NUL-terminated base64 text of p, or NULL on ENOMEM. */
static char *b64_encode(const unsigned char *p, size_t n)
{
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        *o++ = b64_chars[v >> 18 & 63];
        *o++ = b64_chars[v >> 12 & 63];
        *o++ = i + 1 < n ? b64_chars[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? b64_chars[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int b64_value(char c)
{
    const char *at = c ? strchr(b64_chars, c) : NULL;
    return at ? (int)(at - b64_chars) : -1;
}

/* Decodes text (strict: length a multiple of 4, padding only at the end)
 * into a malloc'd buffer. Returns false when the text is not base64; *out is
 * NULL then, or on ENOMEM with *oom set. */
static bool b64_decode(const char *text, char **out, size_t *outlen, bool *oom)
{
    size_t n = strlen(text);
    *out = NULL;
    *oom = false;
    if (n % 4)
        return false;
    size_t pad = n && text[n - 1] == '=' ? (n >= 2 && text[n - 2] == '=' ? 2 : 1) : 0;
    unsigned char *buf = malloc(n / 4 * 3 + 1);
    if (!buf) {
        *oom = true;
        return false;
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        for (size_t j = 0; j < 4; j++) {
            int d = b64_value(text[i + j]);
            bool padding = i + j >= n - pad;
            if (padding ? text[i + j] != '=' : d < 0) {
                free(buf);
                return false;
            }
            v = v << 6 | (uint32_t)(padding ? 0 : d);
        }
        buf[len++] = (unsigned char)(v >> 16);
        buf[len++] = (unsigned char)(v >> 8);
        buf[len++] = (unsigned char)v;
    }
    *out = (char *)buf;
    *outlen = len - pad;
    return true;
}

/* Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF), no NUL. */
static bool plain_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : 0;
        if (k == 0 || c > 0xf4 || n - i <= k)
            return false;
        uint32_t cp = c & (0x3fu >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3fu);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

/* ---- writing ---------------------------------------------------------- */

/* Tree building: the first failed allocation sets oom; later adds are
 * no-ops and the caller checks oom once. */
typedef struct jw {
    const roast_agg *agg;
    bool oom;
} jw;

static cJSON *jadd(jw *w, cJSON *array, cJSON *item)
{
    if (!item || !array || !cJSON_AddItemToArray(array, item)) {
        w->oom = true;
        if (item && !array)
            cJSON_Delete(item);
        return NULL;
    }
    return item;
}

static cJSON *jset(jw *w, cJSON *obj, const char *key, cJSON *item)
{
    if (!item || !obj || !cJSON_AddItemToObject(obj, key, item)) {
        w->oom = true;
        if (item && !obj)
            cJSON_Delete(item);
        return NULL;
    }
    return item;
}

static cJSON *jdouble(double d)
{
    if (isnan(d))
        return cJSON_CreateString(signbit(d) ? "-nan" : "nan");
    if (isinf(d))
        return cJSON_CreateString(d < 0 ? "-inf" : "inf");
    char text[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, d);
        double back = strtod(text, NULL);
        if (memcmp(&back, &d, sizeof d) == 0)
            break;
    }
    for (char *c = text; *c; c++)
        if (*c == ',') /* a locale's decimal comma */
            *c = '.';
    return cJSON_CreateRaw(text);
}

static cJSON *juint(uint64_t u)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)u);
    return u <= EXACT_UINT_MAX ? cJSON_CreateRaw(text) : cJSON_CreateString(text);
}

static cJSON *jbytes(roast_str s)
{
    char *text = b64_encode((const unsigned char *)s.ptr, s.len);
    cJSON *item = text ? cJSON_CreateString(text) : NULL;
    free(text);
    return item;
}

static cJSON *jstring(const roast_agg *agg, roast_id id)
{
    roast_str s = roast_intern_get(roast_agg_strings_const(agg), id);
    if (plain_utf8((const unsigned char *)s.ptr, s.len))
        return cJSON_CreateString(s.ptr); /* interned strings are NUL-terminated copies */
    cJSON *obj = cJSON_CreateObject();
    cJSON *b = jbytes(s);
    if (!obj || !b || !cJSON_AddItemToObject(obj, "base64", b)) {
        cJSON_Delete(obj);
        cJSON_Delete(b);
        return NULL;
    }
    return obj;
}

static cJSON *jcell(const roast_agg *agg, char kind, const roast_cell *cell)
{
    switch (kind) {
    case 's': return jstring(agg, cell->id);
    case 'u':
    case 'w': return juint(cell->u);
    case 'd': return jdouble(cell->d);
    default: return jbytes(cell->bytes);
    }
}

/* Row writer: appends one row array to table. */
typedef struct row_ctx {
    jw *w;
    cJSON *table;
} row_ctx;

static int put_row(void *ctx, const roast_table *table, const roast_cell *cells)
{
    row_ctx *c = ctx;
    cJSON *row = jadd(c->w, c->table, cJSON_CreateArray());
    for (size_t j = 0; table->kinds[j]; j++)
        jadd(c->w, row, jcell(c->w->agg, table->kinds[j], &cells[j]));
    return c->w->oom;
}

static void put_point(jw *w, cJSON *points, const roast_series_point *p)
{
    cJSON *a = jadd(w, points, cJSON_CreateArray());
    jadd(w, a, jdouble(p->t_first));
    if (roast_point_is_sample(p)) {
        for (int c = 0; c < ROAST_NCOLS; c++)
            jadd(w, a, jdouble(p->mean[c]));
        return;
    }
    jadd(w, a, jdouble(p->t_last));
    jadd(w, a, juint(p->count));
    const double *cols[3] = {p->min, p->max, p->mean};
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < ROAST_NCOLS; c++)
            jadd(w, a, jdouble(cols[k][c]));
}

static void put_series(jw *w, cJSON *doc)
{
    const roast_series *s = roast_agg_series_const(w->agg);
    cJSON *series = jset(w, doc, "series", cJSON_CreateArray());
    size_t n = roast_series_workers(s, NULL, 0);
    roast_id *workers = malloc((n ? n : 1) * sizeof *workers);
    if (!workers) {
        w->oom = true;
        return;
    }
    n = roast_series_workers(s, workers, n);
    for (size_t i = 0; i < n && !w->oom; i++) {
        cJSON *pair = jadd(w, series, cJSON_CreateArray());
        jadd(w, pair, jstring(w->agg, workers[i]));
        cJSON *points = jadd(w, pair, cJSON_CreateArray());
        size_t np = roast_series_points(s, workers[i]);
        for (size_t j = 0; j < np && !w->oom; j++) {
            roast_series_point p;
            if (roast_series_point_at(s, workers[i], j, &p) == ROAST_OK)
                put_point(w, points, &p);
        }
    }
    free(workers);
}

static void put_limits(jw *w, cJSON *doc)
{
    uint64_t v[ROAST_NLIMITS];
    roast_limits_to_values(roast_agg_limits_get(w->agg), v);
    cJSON *o = jset(w, doc, "limits", cJSON_CreateObject());
    for (int i = 0; i < ROAST_NLIMITS; i++)
        jset(w, o, roast_limit_keys[i], juint(v[i]));
}

static void put_counters(jw *w, cJSON *doc)
{
    roast_agg_report r;
    roast_cell v[ROAST_NCOUNTERS];
    roast_agg_report_get(w->agg, &r);
    roast_report_to_cells(&r, v);
    cJSON *o = jset(w, doc, "counters", cJSON_CreateObject());
    for (int i = 0; i < ROAST_NCOUNTERS; i++)
        jset(w, o, roast_counter_keys[i],
             i == ROAST_COUNTER_HOOK_NS ? jdouble(v[i].d) : juint(v[i].u));
}

static cJSON *build_doc(jw *w)
{
    const roast_agg *agg = w->agg;
    cJSON *doc = cJSON_CreateObject();
    if (!doc) {
        w->oom = true;
        return NULL;
    }
    jset(w, doc, "format", cJSON_CreateString(ROAST_STORE_FORMAT));
    jset(w, doc, "version", juint(ROAST_STORE_VERSION));
    jset(w, doc, "started", jdouble(roast_agg_started(agg)));
    jset(w, doc, "series_epoch", jdouble(roast_series_epoch(roast_agg_series_const(agg))));
    put_limits(w, doc);
    for (int t = 0; t < ROAST_NTABLES; t++) {
        row_ctx c = {w, jset(w, doc, roast_tables[t].name, cJSON_CreateArray())};
        roast_rows_each(agg, (roast_table_id)t, put_row, &c);
    }
    put_counters(w, doc);
    put_series(w, doc);
    return doc;
}

char *roast_store_to_json(const roast_agg *agg)
{
    jw w = {agg, false};
    cJSON *doc = build_doc(&w);
    char *text = w.oom ? NULL : cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}

/* ---- reading ---------------------------------------------------------- */

typedef struct jr {
    roast_agg *agg;
    char *err;
    size_t errcap;
    uint64_t version;
} jr;

/* Picks the named members of an object; see wire.c map_fields. */
/* Finds the n named fields of an object; names from index `required` on may
 * be absent (NULL). Unknown keys are ignored, duplicates refused. */
static roast_status json_fields_some(const cJSON *obj, const char *const *names,
                                     const cJSON **values, size_t n, size_t required,
                                     const char *what, char *err, size_t errcap)
{
    if (!cJSON_IsObject(obj))
        return fail(err, errcap, "%s: expected an object", what);
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    for (const cJSON *m = obj->child; m; m = m->next) {
        for (size_t i = 0; i < n; i++) {
            if (!m->string || strcmp(m->string, names[i]) != 0)
                continue;
            if (values[i])
                return fail(err, errcap, "%s: duplicate key \"%s\"", what, names[i]);
            values[i] = m;
        }
    }
    for (size_t i = 0; i < required; i++)
        if (!values[i])
            return fail(err, errcap, "%s: missing key \"%s\"", what, names[i]);
    return ROAST_OK;
}

static roast_status json_fields(const cJSON *obj, const char *const *names, const cJSON **values,
                                size_t n, const char *what, char *err, size_t errcap)
{
    return json_fields_some(obj, names, values, n, n, what, err, errcap);
}

static bool get_double(const cJSON *item, double *out)
{
    if (cJSON_IsNumber(item)) {
        *out = item->valuedouble;
        return true;
    }
    if (!cJSON_IsString(item))
        return false;
    const char *s = item->valuestring;
    if (strcmp(s, "nan") == 0)
        *out = NAN;
    else if (strcmp(s, "-nan") == 0)
        *out = -NAN;
    else if (strcmp(s, "inf") == 0)
        *out = INFINITY;
    else if (strcmp(s, "-inf") == 0)
        *out = -INFINITY;
    else
        return false;
    return true;
}

static bool get_uint(const cJSON *item, uint64_t *out)
{
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        if (!(d >= 0 && d <= EXACT_INT_MAX && d == floor(d)))
            return false;
        *out = (uint64_t)d;
        return true;
    }
    if (!cJSON_IsString(item) || !item->valuestring[0])
        return false;
    uint64_t v = 0;
    for (const char *p = item->valuestring; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned digit = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

/* Cells (rows.h) in a state file: strings are S values, interned at once;
 * bytes are base64 text, decoded into a malloc'd copy that read_row frees. */
static const char *kind_name(char kind)
{
    switch (kind) {
    case 's': return "a string";
    case 'u': return "an unsigned integer (a string of digits above 2^53)";
    case 'w': return "an unsigned 32-bit integer";
    case 'd': return "a number, \"nan\", \"-nan\", \"inf\" or \"-inf\"";
    default: return "base64 text";
    }
}

/* Interns an S value. Returns ROAST_EMALFORMED (no message) on a wrong
 * type, or the intern status. */
static roast_status get_string(jr *r, const cJSON *item, roast_id *id)
{
    const cJSON *b64 = cJSON_IsObject(item) ? cJSON_GetObjectItemCaseSensitive(item, "base64") : NULL;
    if (cJSON_IsString(item))
        return roast_intern_put(roast_agg_strings(r->agg), item->valuestring,
                                strlen(item->valuestring), id);
    if (!cJSON_IsString(b64))
        return ROAST_EMALFORMED;
    char *bytes;
    size_t len;
    bool oom;
    if (!b64_decode(b64->valuestring, &bytes, &len, &oom))
        return oom ? ROAST_ENOMEM : ROAST_EMALFORMED;
    roast_status status = roast_intern_put(roast_agg_strings(r->agg), bytes, len, id);
    free(bytes);
    return status;
}

static roast_status read_cell(jr *r, const cJSON *item, char kind, roast_cell *out)
{
    uint64_t u;
    bool oom;
    switch (kind) {
    case 's': return get_string(r, item, &out->id);
    case 'u': return get_uint(item, &out->u) ? ROAST_OK : ROAST_EMALFORMED;
    case 'w':
        if (!get_uint(item, &u) || u > UINT32_MAX)
            return ROAST_EMALFORMED;
        out->u = u;
        return ROAST_OK;
    case 'd': return get_double(item, &out->d) ? ROAST_OK : ROAST_EMALFORMED;
    default:
        if (!cJSON_IsString(item))
            return ROAST_EMALFORMED;
        if (b64_decode(item->valuestring, (char **)&out->bytes.ptr, &out->bytes.len, &oom))
            return ROAST_OK;
        return oom ? ROAST_ENOMEM : ROAST_EMALFORMED;
    }
}

static roast_status cell_status(jr *r, roast_status status, const char *table, size_t i,
                                size_t j, char kind)
{
    if (status == ROAST_EMALFORMED)
        return fail(r->err, r->errcap, "state.%s[%zu][%zu]: expected %s", table, i, j,
                    kind_name(kind));
    if (status == ROAST_EFULL)
        return fail(r->err, r->errcap, "state.%s[%zu][%zu]: more strings than limits.max_strings",
                    table, i, j);
    return status;
}

static roast_status read_row(jr *r, const cJSON *row, const roast_table *table, size_t i)
{
    const char *kinds = table->kinds;
    size_t n = strlen(kinds), j = 0;
    if (!cJSON_IsArray(row) || (size_t)cJSON_GetArraySize(row) != n)
        return fail(r->err, r->errcap, "state.%s[%zu]: expected an array of %zu", table->name, i, n);
    roast_cell cells[ROAST_ROW_MAX_CELLS];
    roast_status status = ROAST_OK;
    const cJSON *item = row->child;
    for (; j < n && status == ROAST_OK; j++, item = item->next) {
        memset(&cells[j], 0, sizeof cells[j]);
        status = cell_status(r, read_cell(r, item, kinds[j], &cells[j]), table->name, i, j,
                             kinds[j]);
    }
    if (status == ROAST_OK) {
        status = table->restore(r->agg, cells);
        if (status == ROAST_EFULL)
            status = fail(r->err, r->errcap, "state.%s[%zu]: beyond the file's own limits",
                          table->name, i);
    }
    for (size_t k = 0; k < j; k++)
        if (kinds[k] == 'b')
            free((char *)cells[k].bytes.ptr);
    return status;
}

static roast_status read_table(jr *r, const cJSON *arr, const roast_table *table)
{
    if (!cJSON_IsArray(arr))
        return fail(r->err, r->errcap, "state.%s: expected an array", table->name);
    size_t i = 0;
    for (const cJSON *row = arr->child; row; row = row->next, i++) {
        roast_status status = read_row(r, row, table, i);
        if (status != ROAST_OK)
            return status;
    }
    return ROAST_OK;
}

static bool limit_uint(const void *fields, int i, uint64_t *out)
{
    return get_uint(((const cJSON *const *)fields)[i], out);
}

static roast_status read_limits(jr *r, const cJSON *obj, roast_agg_limits *l)
{
    const cJSON *f[ROAST_NLIMITS];
    roast_status status = json_fields(obj, roast_limit_keys, f, ROAST_NLIMITS, "state.limits",
                                      r->err, r->errcap);
    if (status != ROAST_OK)
        return status;
    return roast_limits_read(l, limit_uint, f, "state.limits", r->err,
                             r->errcap);
}

static roast_status read_counters(jr *r, const cJSON *obj, roast_agg_report *rep)
{
    const cJSON *f[ROAST_NCOUNTERS];
    roast_status status = json_fields_some(obj, roast_counter_keys, f, ROAST_NCOUNTERS,
                                           ROAST_NCOUNTERS_REQUIRED, "state.counters", r->err,
                                           r->errcap);
    if (status != ROAST_OK)
        return status;
    roast_cell v[ROAST_NCOUNTERS];
    for (int i = 0; i < ROAST_NCOUNTERS; i++) {
        v[i].u = 0;
        if (i != ROAST_COUNTER_HOOK_NS && f[i] && !get_uint(f[i], &v[i].u))
            return fail(r->err, r->errcap, "state.counters.%s: expected %s", roast_counter_keys[i],
                        kind_name('u'));
    }
    if (!get_double(f[ROAST_COUNTER_HOOK_NS], &v[ROAST_COUNTER_HOOK_NS].d))
        return fail(r->err, r->errcap, "state.counters.hook_ns_per_call: expected %s", kind_name('d'));
    roast_report_from_cells(rep, v);
    return ROAST_OK;
}

static bool read_point(const jr *r, const cJSON *arr, roast_series_point *p)
{
    roast_column col[ROAST_NCOLS];
    int ncols = roast_columns_of_version(r->version, col);
    int n = cJSON_GetArraySize(arr);
    if (!cJSON_IsArray(arr) || (n != 1 + ncols && n != 3 + 3 * ncols))
        return false;
    const cJSON *v = arr->child;
    uint64_t count = 1;
    for (int c = 0; c < ROAST_NCOLS; c++) /* the columns the version lacks */
        p->min[c] = p->max[c] = p->mean[c] = NAN;
    if (!get_double(v, &p->t_first))
        return false;
    v = v->next;
    if (n == 1 + ncols) {
        p->t_last = p->t_first;
        for (int c = 0; c < ncols; c++, v = v->next) {
            if (!get_double(v, &p->mean[col[c]]))
                return false;
            p->min[col[c]] = p->max[col[c]] = p->mean[col[c]];
        }
    } else {
        if (!get_double(v, &p->t_last) || !get_uint(v->next, &count))
            return false;
        v = v->next->next;
        double *cols[3] = {p->min, p->max, p->mean};
        for (int k = 0; k < 3; k++)
            for (int c = 0; c < ncols; c++, v = v->next)
                if (!get_double(v, &cols[k][col[c]]))
                    return false;
    }
    p->count = (uint32_t)count;
    return count >= 1 && count <= UINT32_MAX && p->t_first <= p->t_last;
}

static roast_status read_worker_series(jr *r, const cJSON *pair, size_t i)
{
    if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2 || !cJSON_IsArray(pair->child->next))
        return fail(r->err, r->errcap, "state.series[%zu]: expected [worker, [point, ...]]", i);
    roast_id worker;
    roast_status status = cell_status(r, get_string(r, pair->child, &worker), "series", i, 0, 's');
    if (status != ROAST_OK)
        return status;
    size_t j = 0;
    for (const cJSON *pt = pair->child->next->child; pt; pt = pt->next, j++) {
        roast_series_point p;
        roast_column unused[ROAST_NCOLS];
        int ncols = roast_columns_of_version(r->version, unused);
        if (!read_point(r, pt, &p))
            return fail(r->err, r->errcap,
                        "state.series[%zu][1][%zu]: expected %d or %d numbers, a count of at least "
                        "1 and t_first <= t_last", i, j, 1 + ncols, 3 + 3 * ncols);
        status = roast_series_restore(roast_agg_series(r->agg), worker, &p);
        if (status == ROAST_EINVAL || status == ROAST_EFULL)
            return fail(r->err, r->errcap,
                        "state.series[%zu][1][%zu]: refused by the series store (before the epoch, "
                        "out of time order, or a bucket after single samples)", i, j);
        if (status != ROAST_OK)
            return status;
    }
    return ROAST_OK;
}

static roast_status read_series(jr *r, const cJSON *arr)
{
    if (!cJSON_IsArray(arr))
        return fail(r->err, r->errcap, "state.series: expected an array");
    size_t i = 0;
    for (const cJSON *pair = arr->child; pair; pair = pair->next, i++) {
        roast_status status = read_worker_series(r, pair, i);
        if (status != ROAST_OK)
            return status;
    }
    return ROAST_OK;
}

/* The tables, F_WORKERS to F_ERRORS, in roast_tables order. */
enum {
    F_FORMAT, F_VERSION, F_STARTED, F_EPOCH, F_LIMITS, F_WORKERS, F_TASKS, F_DIGESTS, F_SPANS,
    F_RECORDS, F_ERRORS, F_COUNTERS, F_SERIES, F_NKEYS
};
static const char *const doc_keys[F_NKEYS] = {
    "format", "version", "started", "series_epoch", "limits", "workers", "tasks", "digests",
    "spans", "records", "errors", "counters", "series"};

static roast_status read_header(jr *r, const cJSON *doc, const cJSON **f)
{
    const cJSON *format = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "format") : NULL;
    if (!cJSON_IsString(format) || strcmp(format->valuestring, ROAST_STORE_FORMAT) != 0)
        return fail(r->err, r->errcap, "state: not a %s document (\"format\" is %s)",
                    ROAST_STORE_FORMAT, cJSON_IsString(format) ? format->valuestring : "absent or not a string");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
    uint64_t v;
    if (!version || !get_uint(version, &v))
        return fail(r->err, r->errcap, "state.version: expected %s", kind_name('u'));
    if (v > ROAST_STORE_VERSION)
        return fail(r->err, r->errcap, "state: version %llu is newer than this build's version %d",
                    (unsigned long long)v, ROAST_STORE_VERSION);
    if (v < ROAST_STORE_OLDEST)
        return fail(r->err, r->errcap, "state: unknown version %llu", (unsigned long long)v);
    r->version = v;
    roast_status status = json_fields(doc, doc_keys, f, F_NKEYS, "state", r->err, r->errcap);
    if (status != ROAST_OK)
        return status;
    double started, epoch;
    if (!get_double(f[F_STARTED], &started) || !isfinite(started))
        return fail(r->err, r->errcap, "state.started: expected a finite number");
    if (!get_double(f[F_EPOCH], &epoch) || memcmp(&epoch, &started, sizeof epoch) != 0)
        return fail(r->err, r->errcap, "state.series_epoch: expected a number equal to started");
    roast_agg_limits limits;
    status = read_limits(r, f[F_LIMITS], &limits);
    if (status != ROAST_OK)
        return status;
    r->agg = roast_agg_new_restored(&limits, started);
    return r->agg ? ROAST_OK : ROAST_ENOMEM;
}

static roast_status read_doc(jr *r, const cJSON *doc)
{
    const cJSON *f[F_NKEYS];
    roast_status status = read_header(r, doc, f);
    for (int t = 0; t < ROAST_NTABLES && status == ROAST_OK; t++)
        status = read_table(r, f[F_WORKERS + t], &roast_tables[t]);
    roast_agg_report report;
    if (status == ROAST_OK)
        status = read_counters(r, f[F_COUNTERS], &report);
    if (status == ROAST_OK)
        status = read_series(r, f[F_SERIES]);
    if (status == ROAST_OK)
        roast_agg_restore_report(r->agg, &report);
    return status;
}

/* Offset of the first \u0000 escape in the JSON text, or -1. cJSON decodes it
 * into a NUL that would silently cut the string short; the writer never emits
 * one (strings with NUL are written as base64). An escape is a backslash
 * preceded by an even run of backslashes. */
static ptrdiff_t nul_escape(const char *json, size_t len)
{
    size_t run = 0; /* backslashes just before position i */
    for (size_t i = 0; i < len; i++) {
        if (json[i] != '\\') {
            run = 0;
            continue;
        }
        if (run % 2 == 0 && i + 5 < len && json[i + 1] == 'u' && memcmp(json + i + 2, "0000", 4) == 0)
            return (ptrdiff_t)i;
        run++;
    }
    return -1;
}

roast_status roast_store_from_json(const char *json, size_t len, roast_agg **out, char *err,
                                   size_t errcap)
{
    *out = NULL;
    if (!json && len)
        return ROAST_EINVAL;
    ptrdiff_t nul = nul_escape(json, len);
    if (nul >= 0)
        return fail(err, errcap, "state: a string holds \\u0000 at byte %td (NUL is not allowed)",
                    nul);
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(json, len, &end, false);
    if (!doc) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        return fail(err, errcap, "state: not valid JSON (at byte %zu)", at);
    }
    for (const char *p = end; p < json + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
            cJSON_Delete(doc);
            return fail(err, errcap, "state: trailing characters at byte %zu", (size_t)(p - json));
        }
    }
    jr r = {NULL, err, errcap, ROAST_STORE_VERSION};
    roast_status status = read_doc(&r, doc);
    cJSON_Delete(doc);
    if (status != ROAST_OK) {
        roast_agg_free(r.agg);
        return status;
    }
    *out = r.agg;
    return ROAST_OK;
}

/* ---- files ------------------------------------------------------------- */

/* Writes to path.tmp and renames, so a crash never leaves half a file. */
roast_status roast_store_write(const roast_agg *agg, const char *path, char *err, size_t errcap)
{
    char *text = roast_store_to_json(agg);
    if (!text)
        return roast_fail(ROAST_ENOMEM, err, errcap, "%s: out of memory building the state", path);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        free(text);
        return roast_fail(ROAST_ENOMEM, err, errcap, "%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    roast_status status = ROAST_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        status = roast_fail(ROAST_EIO, err, errcap, "cannot write %s: %s", path, strerror(errno));
    } else {
        size_t n = strlen(text);
        bool ok = fwrite(text, 1, n, f) == n;
        int saved = errno;
        if (fclose(f) != 0 && ok) {
            ok = false;
            saved = errno;
        }
        if (ok && rename(tmp, path) != 0) {
            ok = false;
            saved = errno;
        }
        if (!ok) {
            remove(tmp);
            status = roast_fail(ROAST_EIO, err, errcap, "cannot write %s: %s", path, strerror(saved));
        }
    }
    free(tmp);
    free(text);
    return status;
}

/* Reads a whole file into a malloc'd buffer, growing as it goes (works for
 * pipes too; a directory fails in fread with EISDIR). */
static roast_status read_file(const char *path, char **data, size_t *len, char *err, size_t errcap)
{
    *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return roast_fail(ROAST_EIO, err, errcap, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64 * 1024;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return roast_fail(ROAST_ENOMEM, err, errcap, "%s: out of memory after %zu bytes",
                                 path, n);
            }
            buf = grown;
        }
        errno = 0;
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0 || n < cap) {
            if (ferror(f)) {
                int saved = errno;
                free(buf);
                fclose(f);
                return roast_fail(ROAST_EIO, err, errcap, "cannot read %s: %s", path,
                                 strerror(saved ? saved : EIO));
            }
            if (feof(f))
                break;
        }
    }
    fclose(f);
    *data = buf;
    *len = n;
    return ROAST_OK;
}

roast_status roast_store_read(const char *path, roast_agg **out, char *err, size_t errcap)
{
    *out = NULL;
    char *data = NULL;
    size_t len = 0;
    roast_status status = read_file(path, &data, &len, err, errcap);
    if (status != ROAST_OK)
        return status;
    char msg[512] = "";
    status = roast_store_from_json(data, len, out, msg, sizeof msg);
    free(data);
    if (status != ROAST_OK)
        roast_fail(status, err, errcap, "%s: %s", path, msg[0] ? msg : roast_status_str(status));
    return status;
}
