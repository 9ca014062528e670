/* rows: the layout of the aggregator's state that the snapshot (wire.c) and
 * the state file (store.c) share, so that the two formats cannot drift
 * apart: the columns of each table, the keys of "limits" and "counters",
 * and when a series point takes its compact form. Private to native/src;
 * the formats themselves only read and write cells.
 *
 * A table row is an array of cells, one per column, and a table's columns
 * are a string of kinds, one char each:
 *
 *   's'  a string (.id): an interned id in the aggregator
 *   'u'  an unsigned 64-bit integer (.u)
 *   'w'  an unsigned 32-bit integer (.u, at most UINT32_MAX)
 *   'd'  a double (.d)
 *   'b'  opaque bytes (.bytes)
 *
 * Each format names the kinds in its own words in its error messages. */
#ifndef ROAST_ROWS_H
#define ROAST_ROWS_H

#include <stdbool.h>

#include "roast/agg.h"
#include "roast/series.h"

typedef union roast_cell {
    roast_id id;
    uint64_t u;
    double d;
    roast_str bytes; /* who owns them: see roast_rows_each and the readers */
} roast_cell;

/* The widest table (workers, tasks). */
#define ROAST_ROW_MAX_CELLS 11

/* Tables in the order both formats write them. */
typedef enum roast_table_id {
    ROAST_TABLE_WORKERS,
    ROAST_TABLE_TASKS,
    ROAST_TABLE_DIGESTS,
    ROAST_TABLE_SPANS,
    ROAST_TABLE_RECORDS,
    ROAST_TABLE_ERRORS,
    ROAST_NTABLES
} roast_table_id;

typedef struct roast_table {
    const char *name;  /* the key of the table in both formats */
    const char *kinds; /* one kind per column, in column order */
    int span_col;      /* the column a snapshot's span filter looks at; -1: none */
    /* Sets the row the cells describe (roast_agg_restore_*, or set_span). */
    roast_status (*restore)(roast_agg *agg, const roast_cell *cells);
} roast_table;

extern const roast_table roast_tables[ROAST_NTABLES];

/* Visits the rows of a table in insertion order as cells. Bytes cells
 * borrow the aggregator's record data. A nonzero return stops the walk and
 * is returned. */
typedef int (*roast_row_visitor)(void *ctx, const roast_table *table, const roast_cell *cells);
int roast_rows_each(const roast_agg *agg, roast_table_id table, roast_row_visitor visit, void *ctx);

/* "limits": unsigned integers, in this key order. */
#define ROAST_NLIMITS 7
extern const char *const roast_limit_keys[ROAST_NLIMITS];
void roast_limits_to_values(const roast_agg_limits *limits, uint64_t values[ROAST_NLIMITS]);
/* Reads field i of a decoder's own field array as an unsigned integer;
 * false when it is not one. */
typedef bool (*roast_uint_reader)(const void *fields, int i, uint64_t *out);
/* Fills *limits from `fields` (in key order) read with `get`, checking every
 * range the aggregator needs; errors name the field under `where`
 * ("snapshot.limits"). Both readers of limits call this, so they refuse alike. */
roast_status roast_limits_read(roast_agg_limits *limits, roast_uint_reader get,
                               const void *fields, const char *where,
                               char *err, size_t errcap);

/* "counters": the fields of roast_agg_report, in this key order; all are
 * unsigned integers (.u) except hook_ns_per_call, a double (.d). */
#define ROAST_NCOUNTERS 18
/* Counters from this index on came later: a file or snapshot without them reads as 0. */
#define ROAST_NCOUNTERS_REQUIRED 17
#define ROAST_COUNTER_HOOK_NS 4
extern const char *const roast_counter_keys[ROAST_NCOUNTERS];
void roast_report_to_cells(const roast_agg_report *report, roast_cell cells[ROAST_NCOUNTERS]);
void roast_report_from_cells(roast_agg_report *report, const roast_cell cells[ROAST_NCOUNTERS]);

/* roast_series_new refuses caps below 64 KiB (series.h); roast_limits_read
 * refuses a "series_cap_bytes" below it (an int, for the message that prints it). */
#define ROAST_SERIES_MIN_CAP (64 * 1024)

/* Whether a series point is written in the compact single-sample form
 * ([t, v0..]): exactly when that form loses nothing. */
bool roast_point_is_sample(const roast_series_point *p);

#endif
