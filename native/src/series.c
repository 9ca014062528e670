/* series: per-worker columnar time series under a hard byte cap.
 *
 * Layout. Each worker owns
 *   - a raw block of rc samples stored field after field: time (uint32 ms
 *     since the epoch) | 14 float32 columns | executing (uint16) | last_seen
 *     (uint16 centiseconds before the sample time): 64 bytes per sample;
 *   - two change lists, memory_limit and nthreads, of (sample number, value)
 *     pairs: a raw sample reports the value of the last change at or before
 *     its number. Numbers rather than times keep two samples taken in the
 *     same millisecond exact;
 *   - an array of buckets, all older than its raw samples.
 *
 * Encodings. executing is rounded and clamped to 0..65534; last_seen is
 * stored as the age (sample time - last_seen) rounded to centiseconds and
 * clamped to 0..655.34 s, and read back as time - age. 65535 marks NaN in
 * both. Float columns are rounded to float32; NaN survives everywhere.
 *
 * Buckets. min and max ignore NaN (they are NaN only when no covered sample
 * had the column). mean is NaN as soon as one covered sample lacked the
 * column: a bucket keeps a single count, and a mean over fewer samples than
 * that count could not be merged exactly. min, max and mean are computed in
 * double and stored as float32, except last_seen, kept in double because a
 * clock reading in float32 is off by up to a minute.
 *
 * Bound. `bytes` is every byte this store has asked malloc for: the struct,
 * the worker array, its index, raw blocks, bucket arrays and change lists, at
 * their allocated sizes (allocator overhead is not counted).
 *   - Every growth is checked before it is made: appends, restores and new
 *     workers may bring bytes up to cap - RESERVE, RESERVE being one bucket.
 *   - When a growth does not fit, a fold pass runs: (1) every worker folds
 *     the oldest half of its raw samples, in whole groups of GROUP samples,
 *     into one bucket per group; (2) if that is not enough, every worker's
 *     buckets merge pairwise; (3) if the pass freed nothing, every whole group
 *     of every worker is folded and unused raw capacity is trimmed. Passes
 *     repeat until the growth fits; when a pass frees nothing the sample is
 *     dropped and counted.
 *   - Folding grows a bucket array by at most what the cap allows (the
 *     reserve guarantees room for one bucket, 240 bytes) and then shrinks the
 *     raw block by 1,024 bytes per bucket made; merging and pruning only free.
 * So bytes <= cap at every instant, and each pass frees memory or ends. */
#include "roast/series.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *const roast_column_names[ROAST_NCOLS] = {
    "memory",     "memory_limit",  "nthreads",  "processing", "executing",  "managed",
    "occupancy",  "cpu",           "spilled",   "net_read",   "net_write",  "disk_read",
    "disk_write", "node_cores",    "node_runnable", "node_load", "node_steal", "last_seen",
};

const roast_column roast_v2_columns[ROAST_V2_NCOLS] = {
    ROAST_COL_MEMORY,     ROAST_COL_MEMORY_LIMIT, ROAST_COL_NTHREADS,  ROAST_COL_PROCESSING,
    ROAST_COL_EXECUTING,  ROAST_COL_MANAGED,      ROAST_COL_OCCUPANCY, ROAST_COL_CPU,
    ROAST_COL_SPILLED,    ROAST_COL_NET_READ,     ROAST_COL_NET_WRITE, ROAST_COL_DISK_READ,
    ROAST_COL_DISK_WRITE, ROAST_COL_LAST_SEEN,
};

int roast_columns_of_version(int version, roast_column *cols)
{
    if (version == 2) {
        memcpy(cols, roast_v2_columns, sizeof roast_v2_columns);
        return ROAST_V2_NCOLS;
    }
    for (int c = 0; c < ROAST_NCOLS; c++)
        cols[c] = (roast_column)c;
    return ROAST_NCOLS;
}

enum {
    GROUP = 16,                      /* raw samples per new bucket */
    SAMPLE_BYTES = 64,               /* raw bytes per sample, all fields */
    RAW_FIELDS = 17,                 /* time, 14 floats, executing, last_seen */
    FIELD_EXECUTING = 15,
    FIELD_LAST_SEEN = 16,
    BUCKET_FLOATS = ROAST_COL_LAST_SEEN, /* columns a bucket keeps in float32 */
};

#define U16_NAN 0xFFFFu
#define U16_TOP 0xFFFEu
#define MIN_CAP ((size_t)64 << 10)
#define RESERVE (sizeof(series_bucket))

/* Byte offset of each raw field per sample of capacity, and its width. */
static const uint8_t field_off[RAW_FIELDS] = {0,  4,  8,  12, 16, 20, 24, 28, 32,
                                               36, 40, 44, 48, 52, 56, 60, 62};
static const uint8_t field_size[RAW_FIELDS] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2, 2};

/* Raw float field of each column (0 = not a float column). */
static const uint8_t float_field[ROAST_NCOLS] = {
    [ROAST_COL_MEMORY] = 1,    [ROAST_COL_PROCESSING] = 2, [ROAST_COL_MANAGED] = 3,
    [ROAST_COL_OCCUPANCY] = 4, [ROAST_COL_CPU] = 5,        [ROAST_COL_SPILLED] = 6,
    [ROAST_COL_NET_READ] = 7,  [ROAST_COL_NET_WRITE] = 8,  [ROAST_COL_DISK_READ] = 9,
    [ROAST_COL_DISK_WRITE] = 10, [ROAST_COL_NODE_CORES] = 11, [ROAST_COL_NODE_RUNNABLE] = 12,
    [ROAST_COL_NODE_LOAD] = 13,  [ROAST_COL_NODE_STEAL] = 14,
};

_Static_assert(sizeof field_off == RAW_FIELDS && sizeof field_size == RAW_FIELDS,
               "a raw field without its offset or width");

typedef struct series_bucket {
    double seen_min, seen_max, seen_mean; /* last_seen, scheduler clock */
    uint32_t t_first, t_last;             /* ms since the epoch */
    uint32_t count;
    float min[BUCKET_FLOATS], max[BUCKET_FLOATS], mean[BUCKET_FLOATS];
} series_bucket;

typedef struct series_change {
    uint64_t number; /* worker sample number from which value holds */
    double value;
} series_change;

typedef struct change_list {
    series_change *at;
    uint32_t n, cap;
} change_list;

typedef struct series_worker {
    roast_id id;
    uint32_t n, rc;          /* raw samples held, raw capacity */
    uint32_t nb, bcap;       /* buckets held, bucket capacity */
    unsigned char *raw;      /* owned; rc samples, see field_off */
    series_bucket *buckets;  /* owned; oldest first */
    uint64_t next_number;    /* raw samples are numbered next_number - n .. next_number - 1 */
    uint64_t covered;        /* samples covered by held points; <= UINT32_MAX so counts never overflow */
    double last_time;        /* newest time accepted, for the ordering rule */
    change_list limit, threads;
} series_worker;

struct roast_series {
    double epoch;
    size_t cap, bytes;
    series_worker *workers;  /* owned; order of first appearance */
    uint32_t nworkers, wcap;
    uint32_t *slots;         /* owned; open-addressing index: worker index + 1, 0 = empty */
    uint32_t nslots;         /* power of two, at least twice nworkers */
    uint64_t samples, folds, refused, dropped;
};

/* ---- encodings ---------------------------------------------------------- */

static float to_f32(double x)
{
    /* Out-of-range conversion is undefined in C; IEEE rounding sends values
     * from the midpoint above FLT_MAX to infinity, so do that explicitly. */
    if (x >= 0x1.ffffffp127)
        return INFINITY;
    if (x <= -0x1.ffffffp127)
        return -INFINITY;
    return (float)x;
}

static uint16_t to_u16(double x)
{
    if (isnan(x))
        return U16_NAN;
    if (!(x > 0))
        return 0;
    if (x >= U16_TOP)
        return U16_TOP;
    return (uint16_t)floor(x + 0.5);
}

static bool time_to_ms(const roast_series *s, double t, uint32_t *ms)
{
    if (!(t >= s->epoch)) /* NaN and times before the epoch */
        return false;
    double d = floor((t - s->epoch) * 1000.0 + 0.5);
    if (!(d <= (double)UINT32_MAX))
        return false;
    *ms = (uint32_t)d;
    return true;
}

static double ms_to_time(const roast_series *s, uint32_t ms) { return s->epoch + ms / 1000.0; }

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- accounting --------------------------------------------------------- */

/* Whether `more` bytes may be added by an append, restore or new worker. */
static bool fits(const roast_series *s, size_t more)
{
    return s->bytes <= s->cap - RESERVE && more <= s->cap - RESERVE - s->bytes;
}

/* Elements to add to a full array: `preferred`, or as many as fit. */
static size_t growth_step(const roast_series *s, size_t preferred, size_t elem_bytes)
{
    size_t room = (s->cap - RESERVE - s->bytes) / elem_bytes;
    return preferred < room ? preferred : room;
}

/* Resizes the array that `array` points to (a pointer to any element
 * pointer) from *cap to new_cap elements of `size` bytes, keeping s->bytes
 * the sum of the blocks the series owns. On failure nothing changes. */
static bool resize_array(roast_series *s, void *array, uint32_t *cap, uint32_t new_cap,
                         size_t size)
{
    void *p;
    memcpy(&p, array, sizeof p); /* any element type, without type punning */
    if (new_cap == 0) {
        free(p);
        p = NULL;
    } else {
        p = realloc(p, (size_t)new_cap * size);
        if (!p)
            return false;
    }
    memcpy(array, &p, sizeof p);
    s->bytes = s->bytes - (size_t)*cap * size + (size_t)new_cap * size;
    *cap = new_cap;
    return true;
}

/* ---- change lists ------------------------------------------------------- */

static bool change_needed(const change_list *cl, double value)
{
    return cl->n == 0 || !same_bits(cl->at[cl->n - 1].value, value);
}

/* Index of the last change at or before number; the list always holds one
 * at or before the oldest raw sample (see changes_prune). */
static uint32_t change_index(const change_list *cl, uint64_t number)
{
    uint32_t lo = 0, hi = cl->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cl->at[mid].number <= number)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

static uint32_t change_new_cap(const change_list *cl) { return cl->cap ? cl->cap * 2 : 2; }

static size_t change_growth_bytes(const change_list *cl, bool adding)
{
    if (!adding || cl->n < cl->cap)
        return 0;
    return (size_t)(change_new_cap(cl) - cl->cap) * sizeof(series_change);
}

/* Drops changes that no raw sample from number `oldest` on can see. */
static void changes_prune(roast_series *s, change_list *cl, uint64_t oldest)
{
    if (cl->n == 0)
        return;
    uint32_t first = change_index(cl, oldest);
    if (first == 0)
        return;
    cl->n -= first;
    memmove(cl->at, cl->at + first, (size_t)cl->n * sizeof(series_change));
    if (cl->n < cl->cap / 2)
        resize_array(s, &cl->at, &cl->cap, cl->n, sizeof *cl->at); /* refused: keeps the block */
}

/* ---- raw blocks --------------------------------------------------------- */

static void *raw_field(const series_worker *w, int field)
{
    return w->raw + (size_t)field_off[field] * w->rc;
}

/* Moves samples [from, n) of a block laid out for old_cap to [0, n - from)
 * of the layout for new_cap (new_cap >= n - from). Fields move toward the
 * front when the block shrinks and toward the back when it grows; walking
 * them in that direction never overwrites a field not yet moved. */
static void raw_relayout(unsigned char *raw, uint32_t from, uint32_t n, uint32_t old_cap,
                         uint32_t new_cap)
{
    for (int i = 0; i < RAW_FIELDS; i++) {
        int f = new_cap <= old_cap ? i : RAW_FIELDS - 1 - i;
        memmove(raw + (size_t)field_off[f] * new_cap,
                raw + (size_t)field_off[f] * old_cap + (size_t)field_size[f] * from,
                (size_t)field_size[f] * (n - from));
    }
}

static roast_status raw_grow(roast_series *s, series_worker *w, uint32_t cap)
{
    uint32_t old_cap = w->rc;
    if (!resize_array(s, &w->raw, &w->rc, cap, SAMPLE_BYTES))
        return ROAST_ENOMEM;
    raw_relayout(w->raw, 0, w->n, old_cap, cap);
    return ROAST_OK;
}

/* Forgets the oldest k raw samples and shrinks the block to fit the rest. */
static void raw_drop_front(roast_series *s, series_worker *w, uint32_t k)
{
    uint32_t keep = w->n - k;
    raw_relayout(w->raw, k, w->n, w->rc, keep);
    w->n = keep;
    if (!resize_array(s, &w->raw, &w->rc, keep, SAMPLE_BYTES))
        raw_relayout(w->raw, 0, keep, keep, w->rc); /* keep the larger block */
}

static void raw_read(const roast_series *s, const series_worker *w, uint32_t i, double *t,
                     double v[ROAST_NCOLS])
{
    const uint32_t *times = raw_field(w, 0);
    *t = ms_to_time(s, times[i]);
    for (int c = 0; c < ROAST_NCOLS; c++) {
        if (float_field[c])
            v[c] = ((const float *)raw_field(w, float_field[c]))[i];
    }
    uint64_t number = w->next_number - w->n + i;
    v[ROAST_COL_MEMORY_LIMIT] = w->limit.at[change_index(&w->limit, number)].value;
    v[ROAST_COL_NTHREADS] = w->threads.at[change_index(&w->threads, number)].value;
    uint16_t executing = ((const uint16_t *)raw_field(w, FIELD_EXECUTING))[i];
    v[ROAST_COL_EXECUTING] = executing == U16_NAN ? NAN : (double)executing;
    uint16_t age = ((const uint16_t *)raw_field(w, FIELD_LAST_SEEN))[i];
    v[ROAST_COL_LAST_SEEN] = age == U16_NAN ? NAN : *t - age / 100.0;
}

/* ---- buckets ------------------------------------------------------------ */

/* Running min/max/sum of a run of samples, in double. */
typedef struct summary {
    double min[ROAST_NCOLS], max[ROAST_NCOLS], sum[ROAST_NCOLS];
    bool gap[ROAST_NCOLS]; /* some sample lacked the column */
    uint32_t count;
} summary;

static void summary_init(summary *a)
{
    for (int c = 0; c < ROAST_NCOLS; c++) {
        a->min[c] = a->max[c] = NAN;
        a->sum[c] = 0;
        a->gap[c] = false;
    }
    a->count = 0;
}

static void summary_add(summary *a, const double v[ROAST_NCOLS])
{
    for (int c = 0; c < ROAST_NCOLS; c++) {
        a->min[c] = fmin(a->min[c], v[c]); /* fmin and fmax ignore NaN */
        a->max[c] = fmax(a->max[c], v[c]);
        if (isnan(v[c]))
            a->gap[c] = true;
        else
            a->sum[c] += v[c];
    }
    a->count++;
}

static double summary_mean(const summary *a, int c)
{
    return a->gap[c] ? NAN : a->sum[c] / a->count;
}

static double merged_mean(double ma, uint32_t ca, double mb, uint32_t cb)
{
    if (isnan(ma) || isnan(mb))
        return NAN;
    return (ma * ca + mb * cb) / ((double)ca + cb);
}

static void bucket_from_raw(const roast_series *s, const series_worker *w, uint32_t first,
                            series_bucket *b)
{
    summary a;
    summary_init(&a);
    for (uint32_t i = first; i < first + GROUP; i++) {
        double t, v[ROAST_NCOLS];
        raw_read(s, w, i, &t, v);
        summary_add(&a, v);
    }
    const uint32_t *times = raw_field(w, 0);
    b->t_first = times[first];
    b->t_last = times[first + GROUP - 1];
    b->count = a.count;
    for (int c = 0; c < BUCKET_FLOATS; c++) {
        b->min[c] = to_f32(a.min[c]);
        b->max[c] = to_f32(a.max[c]);
        b->mean[c] = to_f32(summary_mean(&a, c));
    }
    b->seen_min = a.min[ROAST_COL_LAST_SEEN];
    b->seen_max = a.max[ROAST_COL_LAST_SEEN];
    b->seen_mean = summary_mean(&a, ROAST_COL_LAST_SEEN);
}

static void bucket_merge(series_bucket *into, const series_bucket *b)
{
    for (int c = 0; c < BUCKET_FLOATS; c++) {
        into->min[c] = fminf(into->min[c], b->min[c]);
        into->max[c] = fmaxf(into->max[c], b->max[c]);
        into->mean[c] = to_f32(merged_mean(into->mean[c], into->count, b->mean[c], b->count));
    }
    into->seen_min = fmin(into->seen_min, b->seen_min);
    into->seen_max = fmax(into->seen_max, b->seen_max);
    into->seen_mean = merged_mean(into->seen_mean, into->count, b->seen_mean, b->count);
    into->t_last = b->t_last;
    into->count += b->count;
}

/* ---- folding ------------------------------------------------------------ */

/* Folds up to `groups` of w's oldest whole groups into buckets. The bucket
 * array grows only as far as the cap allows, before the raw block shrinks. */
static void fold_worker(roast_series *s, series_worker *w, uint32_t groups)
{
    uint32_t room = w->bcap - w->nb;
    if (groups > room) {
        size_t affordable = (s->cap - s->bytes) / sizeof(series_bucket);
        if (groups - room > affordable)
            groups = room + (uint32_t)affordable;
        if (groups == 0)
            return;
        if (groups > room && !resize_array(s, &w->buckets, &w->bcap, w->nb + groups,
                                           sizeof *w->buckets))
            return;
    }
    for (uint32_t g = 0; g < groups; g++)
        bucket_from_raw(s, w, g * GROUP, &w->buckets[w->nb + g]);
    w->nb += groups;
    raw_drop_front(s, w, groups * GROUP);
    changes_prune(s, &w->limit, w->next_number - w->n);
    changes_prune(s, &w->threads, w->next_number - w->n);
}

/* Folds the oldest half of every worker's raw samples, or with every_group
 * (the last resort) every whole group, also trimming unused raw capacity. */
static void fold_all(roast_series *s, bool every_group)
{
    for (uint32_t i = 0; i < s->nworkers; i++) {
        series_worker *w = &s->workers[i];
        uint32_t groups = (every_group ? w->n : w->n / 2) / GROUP;
        if (groups)
            fold_worker(s, w, groups);
        else if (every_group && w->rc > w->n)
            raw_drop_front(s, w, 0);
    }
}

static void merge_all(roast_series *s)
{
    for (uint32_t i = 0; i < s->nworkers; i++) {
        series_worker *w = &s->workers[i];
        if (w->nb < 2)
            continue;
        uint32_t out = 0;
        for (uint32_t j = 0; j + 1 < w->nb; j += 2, out++) {
            w->buckets[out] = w->buckets[j];
            bucket_merge(&w->buckets[out], &w->buckets[j + 1]);
        }
        if (w->nb % 2)
            w->buckets[out++] = w->buckets[w->nb - 1];
        w->nb = out;
        /* a refused shrink keeps the old block */
        resize_array(s, &w->buckets, &w->bcap, w->nb, sizeof *w->buckets);
    }
}

/* Runs fold passes until `need` bytes fit, or returns ROAST_EFULL when a
 * pass frees nothing. */
static roast_status make_room(roast_series *s, size_t need)
{
    while (!fits(s, need)) {
        size_t before = s->bytes;
        fold_all(s, false);
        if (!fits(s, need))
            merge_all(s);
        if (s->bytes >= before)
            fold_all(s, true);
        if (s->bytes >= before)
            return ROAST_EFULL;
        s->folds++;
    }
    return ROAST_OK;
}

/* ---- workers ------------------------------------------------------------ */

static uint32_t slot_of(roast_id id, uint32_t nslots) { return (id * 2654435761u) & (nslots - 1); }

static series_worker *worker_find(const roast_series *s, roast_id id)
{
    if (!s->nslots)
        return NULL;
    for (uint32_t i = slot_of(id, s->nslots);; i = (i + 1) & (s->nslots - 1)) {
        uint32_t e = s->slots[i];
        if (!e)
            return NULL;
        if (s->workers[e - 1].id == id)
            return &s->workers[e - 1];
    }
}

static void index_put(uint32_t *slots, uint32_t nslots, roast_id id, uint32_t entry)
{
    uint32_t i = slot_of(id, nslots);
    while (slots[i])
        i = (i + 1) & (nslots - 1);
    slots[i] = entry;
}

static size_t index_growth_bytes(const roast_series *s)
{
    if ((size_t)(s->nworkers + 1) * 2 <= s->nslots)
        return 0;
    return (size_t)(s->nslots ? s->nslots * 2 : 8) * sizeof(uint32_t);
}

/* Rebuilds the index at twice the size; the old and new tables are both
 * held (and counted) while it runs. */
static roast_status index_grow(roast_series *s)
{
    uint32_t nslots = s->nslots ? s->nslots * 2 : 8;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return ROAST_ENOMEM;
    for (uint32_t i = 0; i < s->nworkers; i++)
        index_put(slots, nslots, s->workers[i].id, i + 1);
    free(s->slots);
    s->bytes = s->bytes - (size_t)s->nslots * sizeof(uint32_t) + (size_t)nslots * sizeof(uint32_t);
    s->slots = slots;
    s->nslots = nslots;
    return ROAST_OK;
}

static roast_status worker_add(roast_series *s, roast_id id, series_worker **out)
{
    for (;;) {
        size_t need = index_growth_bytes(s) + (s->nworkers == s->wcap ? sizeof(series_worker) : 0);
        if (fits(s, need))
            break;
        roast_status st = make_room(s, need);
        if (st != ROAST_OK)
            return st;
    }
    if (index_growth_bytes(s)) {
        roast_status st = index_grow(s);
        if (st != ROAST_OK)
            return st;
    }
    if (s->nworkers == s->wcap) {
        size_t step = growth_step(s, s->wcap ? s->wcap : 4, sizeof(series_worker));
        if (!resize_array(s, &s->workers, &s->wcap, s->wcap + (uint32_t)step, sizeof *s->workers))
            return ROAST_ENOMEM;
    }
    series_worker *w = &s->workers[s->nworkers];
    memset(w, 0, sizeof *w);
    w->id = id;
    w->last_time = -INFINITY;
    index_put(s->slots, s->nslots, id, ++s->nworkers);
    *out = w;
    return ROAST_OK;
}

/* Undoes worker_add of the newest worker when its first point was not kept,
 * so that every listed worker has data. Being the newest entry, its slot
 * ends every probe chain it is part of. */
static void worker_forget_newest(roast_series *s)
{
    series_worker *w = &s->workers[s->nworkers - 1];
    uint32_t i = slot_of(w->id, s->nslots);
    while (s->slots[i] != s->nworkers)
        i = (i + 1) & (s->nslots - 1);
    s->slots[i] = 0;
    free(w->raw);
    free(w->buckets);
    free(w->limit.at);
    free(w->threads.at);
    s->bytes -= (size_t)w->rc * SAMPLE_BYTES + (size_t)w->bcap * sizeof(series_bucket) +
                (size_t)(w->limit.cap + w->threads.cap) * sizeof(series_change);
    s->nworkers--;
}

static roast_status worker_get(roast_series *s, roast_id id, series_worker **out, bool *created)
{
    *out = worker_find(s, id);
    *created = *out == NULL;
    return *out ? ROAST_OK : worker_add(s, id, out);
}

/* ---- appending ---------------------------------------------------------- */

/* Makes room for one raw sample and the change points it adds. */
static roast_status raw_make_room(roast_series *s, series_worker *w, bool new_limit,
                                  bool new_threads)
{
    for (;;) {
        size_t changes = change_growth_bytes(&w->limit, new_limit) +
                  change_growth_bytes(&w->threads, new_threads);
        size_t raw = w->n == w->rc ? (size_t)GROUP * SAMPLE_BYTES : 0;
        if (fits(s, changes + raw))
            break;
        roast_status st = make_room(s, changes + raw);
        if (st != ROAST_OK)
            return st;
    }
    if (new_limit && w->limit.n == w->limit.cap &&
        !resize_array(s, &w->limit.at, &w->limit.cap, change_new_cap(&w->limit),
                      sizeof *w->limit.at))
        return ROAST_ENOMEM;
    if (new_threads && w->threads.n == w->threads.cap &&
        !resize_array(s, &w->threads.at, &w->threads.cap, change_new_cap(&w->threads),
                      sizeof *w->threads.at))
        return ROAST_ENOMEM;
    if (w->n < w->rc)
        return ROAST_OK;
    size_t step = growth_step(s, w->rc / 2 > GROUP ? w->rc / 2 : GROUP, SAMPLE_BYTES);
    if (step > UINT32_MAX - w->rc)
        step = UINT32_MAX - w->rc;
    return raw_grow(s, w, w->rc + (uint32_t)step);
}

static roast_status raw_push(roast_series *s, series_worker *w, uint32_t ms, double time,
                             const double v[ROAST_NCOLS])
{
    bool new_limit = change_needed(&w->limit, v[ROAST_COL_MEMORY_LIMIT]);
    bool new_threads = change_needed(&w->threads, v[ROAST_COL_NTHREADS]);
    roast_status st = raw_make_room(s, w, new_limit, new_threads);
    if (st != ROAST_OK)
        return st;
    uint32_t i = w->n;
    ((uint32_t *)raw_field(w, 0))[i] = ms;
    for (int c = 0; c < ROAST_NCOLS; c++) {
        if (float_field[c])
            ((float *)raw_field(w, float_field[c]))[i] = to_f32(v[c]);
    }
    ((uint16_t *)raw_field(w, FIELD_EXECUTING))[i] = to_u16(v[ROAST_COL_EXECUTING]);
    /* The age in centiseconds; NaN when last_seen is NaN. */
    double age = (ms_to_time(s, ms) - v[ROAST_COL_LAST_SEEN]) * 100.0;
    ((uint16_t *)raw_field(w, FIELD_LAST_SEEN))[i] = to_u16(age);
    if (new_limit)
        w->limit.at[w->limit.n++] = (series_change){w->next_number, v[ROAST_COL_MEMORY_LIMIT]};
    if (new_threads)
        w->threads.at[w->threads.n++] = (series_change){w->next_number, v[ROAST_COL_NTHREADS]};
    w->n++;
    w->next_number++;
    w->covered++;
    w->last_time = time;
    return ROAST_OK;
}

static roast_status bucket_push(roast_series *s, series_worker *w, uint32_t first, uint32_t last,
                                const roast_series_point *p)
{
    while (w->nb == w->bcap && !fits(s, sizeof(series_bucket))) {
        roast_status st = make_room(s, sizeof(series_bucket));
        if (st != ROAST_OK)
            return st;
    }
    if (w->nb == w->bcap) {
        size_t step = growth_step(s, w->bcap / 2 > 4 ? w->bcap / 2 : 4, sizeof(series_bucket));
        if (!resize_array(s, &w->buckets, &w->bcap, w->bcap + (uint32_t)step, sizeof *w->buckets))
            return ROAST_ENOMEM;
    }
    series_bucket *b = &w->buckets[w->nb++];
    b->t_first = first;
    b->t_last = last;
    b->count = p->count;
    for (int c = 0; c < BUCKET_FLOATS; c++) {
        b->min[c] = to_f32(p->min[c]);
        b->max[c] = to_f32(p->max[c]);
        b->mean[c] = to_f32(p->mean[c]);
    }
    b->seen_min = p->min[ROAST_COL_LAST_SEEN];
    b->seen_max = p->max[ROAST_COL_LAST_SEEN];
    b->seen_mean = p->mean[ROAST_COL_LAST_SEEN];
    w->covered += p->count;
    w->last_time = p->t_last;
    return ROAST_OK;
}

/* Counts a refusal (EINVAL) or a drop at the cap (EFULL). */
static roast_status tally(roast_series *s, roast_status st)
{
    if (st == ROAST_EINVAL)
        s->refused++;
    else if (st == ROAST_EFULL)
        s->dropped++;
    return st;
}

/* Stores p for worker: a raw sample when it covers one, else a bucket. */
static roast_status put_point(roast_series *s, roast_id worker, const roast_series_point *p)
{
    uint32_t first, last;
    if (p->count == 0 || !time_to_ms(s, p->t_first, &first) || !time_to_ms(s, p->t_last, &last) ||
        last < first)
        return tally(s, ROAST_EINVAL);
    series_worker *w;
    bool created;
    roast_status st = worker_get(s, worker, &w, &created);
    if (st != ROAST_OK)
        return tally(s, st);
    if (p->t_first < w->last_time || (p->count > 1 && w->n > 0))
        st = ROAST_EINVAL; /* out of order, or a bucket newer than raw samples */
    else if (w->covered + p->count > UINT32_MAX)
        st = ROAST_EFULL;
    else if (p->count == 1)
        st = raw_push(s, w, first, p->t_last, p->mean);
    else
        st = bucket_push(s, w, first, last, p);
    if (st != ROAST_OK && created)
        worker_forget_newest(s);
    return tally(s, st);
}

roast_status roast_series_append(roast_series *s, roast_id worker, const roast_sample *sample)
{
    if (!s || !sample)
        return ROAST_EINVAL;
    roast_series_point p = {.t_first = sample->time, .t_last = sample->time, .count = 1};
    memcpy(p.mean, sample->v, sizeof p.mean);
    roast_status st = put_point(s, worker, &p);
    if (st == ROAST_OK)
        s->samples++;
    return st;
}

roast_status roast_series_restore(roast_series *s, roast_id worker, const roast_series_point *p)
{
    if (!s || !p)
        return ROAST_EINVAL;
    return put_point(s, worker, p);
}

/* ---- reading ------------------------------------------------------------ */

static void point_from_bucket(const roast_series *s, const series_bucket *b, roast_series_point *out)
{
    out->t_first = ms_to_time(s, b->t_first);
    out->t_last = ms_to_time(s, b->t_last);
    out->count = b->count;
    for (int c = 0; c < BUCKET_FLOATS; c++) {
        out->min[c] = b->min[c];
        out->max[c] = b->max[c];
        out->mean[c] = b->mean[c];
    }
    out->min[ROAST_COL_LAST_SEEN] = b->seen_min;
    out->max[ROAST_COL_LAST_SEEN] = b->seen_max;
    out->mean[ROAST_COL_LAST_SEEN] = b->seen_mean;
}

roast_status roast_series_point_at(const roast_series *s, roast_id worker, size_t index,
                                   roast_series_point *out)
{
    const series_worker *w = s && out ? worker_find(s, worker) : NULL;
    if (!w || index >= (size_t)w->nb + w->n)
        return ROAST_EINVAL;
    if (index < w->nb) {
        point_from_bucket(s, &w->buckets[index], out);
        return ROAST_OK;
    }
    double t, v[ROAST_NCOLS];
    raw_read(s, w, (uint32_t)(index - w->nb), &t, v);
    out->t_first = out->t_last = t;
    out->count = 1;
    memcpy(out->min, v, sizeof v);
    memcpy(out->max, v, sizeof v);
    memcpy(out->mean, v, sizeof v);
    return ROAST_OK;
}

size_t roast_series_points(const roast_series *s, roast_id worker)
{
    const series_worker *w = worker_find(s, worker);
    return w ? (size_t)w->nb + w->n : 0;
}

size_t roast_series_workers(const roast_series *s, roast_id *out, size_t max)
{
    for (size_t i = 0; i < s->nworkers && i < max; i++)
        out[i] = s->workers[i].id;
    return s->nworkers;
}

/* ---- lifetime and counters ---------------------------------------------- */

roast_series *roast_series_new(size_t cap_bytes, double epoch)
{
    if (cap_bytes < MIN_CAP || !isfinite(epoch))
        return NULL;
    roast_series *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->epoch = epoch;
    s->cap = cap_bytes;
    s->bytes = sizeof *s;
    return s;
}

void roast_series_free(roast_series *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nworkers; i++) {
        free(s->workers[i].raw);
        free(s->workers[i].buckets);
        free(s->workers[i].limit.at);
        free(s->workers[i].threads.at);
    }
    free(s->workers);
    free(s->slots);
    free(s);
}

void roast_series_restore_counters(roast_series *s, uint64_t samples, uint64_t folds,
                                   uint64_t refused, uint64_t dropped)
{
    s->samples = samples;
    s->folds = folds;
    s->refused = refused;
    s->dropped = dropped;
}

double roast_series_epoch(const roast_series *s) { return s->epoch; }
size_t roast_series_cap_bytes(const roast_series *s) { return s->cap; }
size_t roast_series_bytes(const roast_series *s) { return s->bytes; }
uint64_t roast_series_samples(const roast_series *s) { return s->samples; }
uint64_t roast_series_folds(const roast_series *s) { return s->folds; }
uint64_t roast_series_refused(const roast_series *s) { return s->refused; }
uint64_t roast_series_dropped(const roast_series *s) { return s->dropped; }
