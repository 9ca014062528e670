/* Test helper: a text dump of everything a client can see of an
 * aggregator, strings resolved and doubles as bits, so two aggregators with
 * equal content (whatever their intern ids) give equal dumps. Included by
 * test_wire.c and test_store.c. */
#ifndef ROAST_TEST_AGG_DUMP_H
#define ROAST_TEST_AGG_DUMP_H

#include <stdarg.h>
#include <stdbool.h>

#include "check.h"
#include "roast/agg.h"
#include "roast/wire.h"

/* Text appended to a growing buffer. */
static void bprintf(roast_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->data = realloc(b->data, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void bstr(roast_buf *b, const roast_agg *agg, roast_id id)
{
    roast_str s = roast_intern_get(roast_agg_strings_const(agg), id);
    bprintf(b, "'");
    for (size_t i = 0; i < s.len; i++)
        bprintf(b, "%02x", (unsigned char)s.ptr[i]);
    bprintf(b, "' ");
}

/* Doubles as their bits, so the dump compares bit for bit. */
static void bnum(roast_buf *b, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    bprintf(b, "%016llx ", (unsigned long long)u);
}

typedef struct dump_ctx {
    roast_buf *b;
    const roast_agg *agg;
} dump_ctx;

/* Starts a line: its kind, then the strings of the n ids. */
static void bhead(const dump_ctx *d, const char *kind, const roast_id *ids, size_t n)
{
    bprintf(d->b, "%s ", kind);
    for (size_t i = 0; i < n; i++)
        bstr(d->b, d->agg, ids[i]);
}

static int dump_task(void *ctx, const roast_task_key *k, const roast_task_stats *s)
{
    dump_ctx *d = ctx;
    bhead(d, "task", (roast_id[]){k->worker, k->span, k->prefix}, 3);
    bprintf(d->b, "%llu %llu %llu %llu ", (unsigned long long)s->transitions,
            (unsigned long long)s->tasks, (unsigned long long)s->erred,
            (unsigned long long)s->output_bytes);
    bnum(d->b, s->compute_seconds);
    bnum(d->b, s->transfer_seconds);
    bnum(d->b, s->first_start);
    bnum(d->b, s->last_stop);
    bprintf(d->b, "\n");
    return 0;
}

static int dump_digest(void *ctx, const roast_digest_key *k, double v)
{
    dump_ctx *d = ctx;
    bhead(d, "digest", (roast_id[]){k->worker, k->context, k->span, k->prefix, k->activity, k->unit},
          6);
    bnum(d->b, v);
    bprintf(d->b, "\n");
    return 0;
}

static int dump_worker(void *ctx, const roast_worker_info *w)
{
    dump_ctx *d = ctx;
    bhead(d, "worker", (roast_id[]){w->address, w->name, w->incarnation}, 3);
    bnum(d->b, w->added);
    bnum(d->b, w->removed);
    bprintf(d->b, "%u %llu %llu %llu %llu %llu\n", w->restarts, (unsigned long long)w->payloads,
            (unsigned long long)w->payload_bytes, (unsigned long long)w->last_seq,
            (unsigned long long)w->gaps, (unsigned long long)w->flushes);
    return 0;
}

static int dump_span(void *ctx, const roast_span_info *s)
{
    dump_ctx *d = ctx;
    bhead(d, "span", (roast_id[]){s->span, s->parent, s->name}, 3);
    bprintf(d->b, "\n");
    return 0;
}

static int dump_record(void *ctx, const roast_record *r)
{
    dump_ctx *d = ctx;
    bhead(d, "record", &r->worker, 1);
    bprintf(d->b, "%llu ", (unsigned long long)r->seq);
    bnum(d->b, r->time);
    for (size_t i = 0; i < r->data.len; i++)
        bprintf(d->b, "%02x", (unsigned char)r->data.ptr[i]);
    bprintf(d->b, "\n");
    return 0;
}

static int dump_error(void *ctx, roast_id name, uint64_t count)
{
    dump_ctx *d = ctx;
    bhead(d, "error", &name, 1);
    bprintf(d->b, "%llu\n", (unsigned long long)count);
    return 0;
}

static void dump_series(roast_buf *b, const roast_agg *agg)
{
    const roast_series *s = roast_agg_series_const(agg);
    roast_id workers[64];
    size_t n = roast_series_workers(s, workers, 64);
    for (size_t i = 0; i < n; i++) {
        size_t np = roast_series_points(s, workers[i]);
        for (size_t j = 0; j < np; j++) {
            roast_series_point p;
            CHECK(roast_series_point_at(s, workers[i], j, &p) == ROAST_OK);
            bprintf(b, "point ");
            bstr(b, agg, workers[i]);
            bnum(b, p.t_first);
            bnum(b, p.t_last);
            bprintf(b, "%u ", p.count);
            for (int c = 0; c < ROAST_NCOLS; c++) {
                bnum(b, p.min[c]);
                bnum(b, p.max[c]);
                bnum(b, p.mean[c]);
            }
            bprintf(b, "\n");
        }
    }
}

/* Everything a client can see of an aggregator, strings resolved. */
static char *dump_agg(const roast_agg *agg)
{
    roast_buf b = {0};
    dump_ctx d = {&b, agg};
    const roast_agg_limits *l = roast_agg_limits_get(agg);
    bprintf(&b, "limits %u %u %u %u %u %zu %zu\nstarted ", l->max_strings, l->max_task_rows,
            l->max_digest_rows, l->max_workers, l->max_spans, l->series_cap_bytes,
            l->record_cap_bytes);
    bnum(&b, roast_agg_started(agg));
    bprintf(&b, "\n");
    roast_agg_each_worker(agg, dump_worker, &d);
    roast_agg_each_task(agg, dump_task, &d);
    roast_agg_each_digest(agg, dump_digest, &d);
    roast_agg_each_span(agg, dump_span, &d);
    roast_agg_each_record(agg, dump_record, &d);
    roast_agg_each_error(agg, dump_error, &d);
    dump_series(&b, agg);
    roast_agg_report r;
    roast_agg_report_get(agg, &r);
    const roast_agg_counters *c = &r.counters;
    bprintf(&b, "counters %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu ",
            (unsigned long long)c->events, (unsigned long long)c->dropped_events,
            (unsigned long long)c->hook_calls, (unsigned long long)c->hook_errors,
            (unsigned long long)c->payloads, (unsigned long long)c->payload_bytes,
            (unsigned long long)c->payload_errors, (unsigned long long)c->records,
            (unsigned long long)c->records_dropped, (unsigned long long)c->rows_refused);
    bnum(&b, c->hook_ns_per_call);
    bprintf(&b, "%llu %llu %llu %llu %llu %llu\n", (unsigned long long)r.series_bytes,
            (unsigned long long)r.series_cap_bytes, (unsigned long long)r.series_samples,
            (unsigned long long)r.series_folds, (unsigned long long)r.strings,
            (unsigned long long)r.intern_overflows);
    return b.data;
}

#endif
