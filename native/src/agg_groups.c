/* agg_groups: task rows summed by one field of their key (the prefix, worker
 * and span totals of a snapshot), and the digests of one context summed over
 * spans by worker or by prefix (the Prometheus export), in order of first
 * appearance. */
#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1 /* a failed allocation is ENOMEM, never an exit */
#include <uthash.h>

#include "roast/agg.h"

typedef struct group {
    roast_id id;
    roast_task_stats sum;
    UT_hash_handle hh;
} group;

typedef struct grouping {
    roast_task_field by;
    group *groups;
    bool nomem;
} grouping;

void roast_task_stats_add(roast_task_stats *sum, const roast_task_stats *s)
{
    sum->transitions += s->transitions;
    sum->tasks += s->tasks;
    sum->erred += s->erred;
    sum->compute_seconds += s->compute_seconds;
    sum->transfer_seconds += s->transfer_seconds;
    sum->output_bytes += s->output_bytes;
    if (s->first_start != 0 && (sum->first_start == 0 || s->first_start < sum->first_start))
        sum->first_start = s->first_start;
    if (s->last_stop > sum->last_stop)
        sum->last_stop = s->last_stop;
}

/* e = the group of key in head, added zeroed when new; NULL when out of memory. */
#define GROUP_GET(head, field, key, e)                              \
    do {                                                            \
        HASH_FIND(hh, (head), &(key), sizeof(key), (e));            \
        if (!(e) && ((e) = calloc(1, sizeof *(e))) != NULL) {       \
            (e)->field = (key);                                     \
            HASH_ADD(hh, (head), field, sizeof((e)->field), (e));   \
            if (!(e)->hh.tbl) {                                     \
                free(e);                                            \
                (e) = NULL;                                         \
            }                                                       \
        }                                                           \
    } while (0)

static roast_id field_of(const roast_task_key *key, roast_task_field by)
{
    switch (by) {
    case ROAST_TASKS_BY_WORKER: return key->worker;
    case ROAST_TASKS_BY_SPAN: return key->span;
    case ROAST_TASKS_BY_PREFIX: break;
    }
    return key->prefix;
}

static int add_row(void *ctx, const roast_task_key *key, const roast_task_stats *s)
{
    grouping *g = ctx;
    roast_id id = field_of(key, g->by);
    group *e;
    GROUP_GET(g->groups, id, id, e);
    if (!e) {
        g->nomem = true;
        return 1;
    }
    roast_task_stats_add(&e->sum, s);
    return 0;
}

int roast_agg_each_task_group(const roast_agg *agg, roast_task_field by,
                              roast_task_group_visitor visit, void *ctx, roast_status *status)
{
    grouping g = {by, NULL, false};
    int rc = roast_agg_each_task(agg, add_row, &g);
    *status = g.nomem ? ROAST_ENOMEM : ROAST_OK;
    for (group *e = g.groups; rc == 0 && e; e = e->hh.next)
        rc = visit(ctx, e->id, &e->sum);
    group *e, *tmp;
    HASH_ITER(hh, g.groups, e, tmp) {
        HASH_DEL(g.groups, e);
        free(e);
    }
    return g.nomem ? 0 : rc;
}

/* ---- digests ------------------------------------------------------------- */

typedef struct digest_group_key {
    roast_id id; /* the worker, the prefix or the span */
    roast_id activity;
    roast_id unit;
} digest_group_key;

_Static_assert(sizeof(digest_group_key) == 3 * sizeof(roast_id), "digest group keys have padding");

typedef struct digest_group {
    digest_group_key key;
    double sum;
    UT_hash_handle hh;
} digest_group;

typedef struct digest_grouping {
    roast_id context;
    roast_digest_field by;
    digest_group *groups;
    bool nomem;
} digest_grouping;

static roast_id grouped_by(roast_digest_field by, const roast_digest_key *key)
{
    switch (by) {
    case ROAST_DIGESTS_BY_WORKER:
        return key->worker;
    case ROAST_DIGESTS_BY_SPAN:
        return key->span;
    case ROAST_DIGESTS_BY_PREFIX:
        break;
    }
    return key->prefix;
}

static int add_digest(void *ctx, const roast_digest_key *key, double value)
{
    digest_grouping *g = ctx;
    if (key->context != g->context)
        return 0;
    digest_group_key k = {grouped_by(g->by, key), key->activity, key->unit};
    digest_group *e;
    GROUP_GET(g->groups, key, k, e);
    if (!e) {
        g->nomem = true;
        return 1;
    }
    e->sum += value;
    return 0;
}

int roast_agg_each_digest_group(const roast_agg *agg, roast_id context, roast_digest_field by,
                                roast_digest_group_visitor visit, void *ctx, roast_status *status)
{
    digest_grouping g = {context, by, NULL, false};
    int rc = roast_agg_each_digest(agg, add_digest, &g);
    *status = g.nomem ? ROAST_ENOMEM : ROAST_OK;
    for (digest_group *e = g.groups; rc == 0 && e; e = e->hh.next)
        rc = visit(ctx, e->key.id, e->key.activity, e->key.unit, e->sum);
    digest_group *e, *tmp;
    HASH_ITER(hh, g.groups, e, tmp) {
        HASH_DEL(g.groups, e);
        free(e);
    }
    return g.nomem ? 0 : rc;
}
