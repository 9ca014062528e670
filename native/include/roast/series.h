/* series: per-worker time series of scheduler-side worker state, columnar and
 * bounded.
 *
 * Samples are kept at full resolution until the store reaches its byte cap;
 * then the oldest samples of every worker are folded into buckets that keep
 * the exact minimum, maximum and mean of each column and the count and time
 * range of the samples they cover, so peaks are never lost. Buckets merge
 * pairwise (exactly) when space is needed again.
 *
 * Storage (per worker-sample, full resolution): time as uint32 milliseconds
 * since the store's epoch, memory_limit and nthreads as change points (they
 * almost never change), executing as uint16, last_seen as uint16 centiseconds
 * before the sample time (saturating at 655.34 s), every other column as
 * float32 (relative precision 6e-8). That is 64 bytes per worker-sample.
 * executing is rounded and clamped to 0..65534; in both uint16 columns 65535
 * marks NaN, so NaN survives in every column.
 *
 * In a bucket, min and max ignore NaN (NaN only if no covered sample had the
 * column); mean is NaN if any covered sample lacked it, so that merging stays
 * exact with one count per bucket. Bucket values are float32, except
 * last_seen, kept in double. series.c explains the fold policy. */
#ifndef ROAST_SERIES_H
#define ROAST_SERIES_H

#include "roast/common.h"

typedef enum roast_column {
    ROAST_COL_MEMORY = 0,   /* process RSS, bytes (ws.metrics["memory"]) */
    ROAST_COL_MEMORY_LIMIT, /* bytes (ws.memory_limit) */
    ROAST_COL_NTHREADS,     /* ws.nthreads */
    ROAST_COL_PROCESSING,   /* len(ws.processing) */
    ROAST_COL_EXECUTING,    /* len(ws.executing) */
    ROAST_COL_MANAGED,      /* ws.nbytes, bytes */
    ROAST_COL_OCCUPANCY,    /* ws.occupancy, seconds */
    ROAST_COL_CPU,          /* ws.metrics["cpu"], percent of one core */
    ROAST_COL_SPILLED,      /* ws.metrics["spilled_bytes"]["disk"], bytes */
    ROAST_COL_NET_READ,     /* host_net_io read_bps, bytes/s */
    ROAST_COL_NET_WRITE,    /* host_net_io write_bps, bytes/s */
    ROAST_COL_DISK_READ,    /* host_disk_io read_bps, bytes/s */
    ROAST_COL_DISK_WRITE,   /* host_disk_io write_bps, bytes/s */
    ROAST_COL_NODE_CORES,    /* the node's online CPUs, ws.metrics["roastcoffea-node"] */
    ROAST_COL_NODE_RUNNABLE, /* the node's runnable threads (procs_running), same */
    ROAST_COL_NODE_LOAD,     /* the node's 1-minute load average, same */
    ROAST_COL_NODE_STEAL,    /* percent of the node's CPU time stolen by its host, same */
    ROAST_COL_LAST_SEEN,    /* ws.last_seen, scheduler clock seconds */
    ROAST_NCOLS
} roast_column;

/* Column names as used on the wire and in Python ("memory", ...). */
extern const char *const roast_column_names[ROAST_NCOLS];
/* The columns of the version 2 wire formats (the node's four came with version 3),
 * in order: a point of version 2 has these, the others read as NaN. */
#define ROAST_V2_NCOLS 14
extern const roast_column roast_v2_columns[ROAST_V2_NCOLS];
/* The columns a point of wire or file format `version` holds, in their order, into
 * cols (room for ROAST_NCOLS); returns how many. */
int roast_columns_of_version(int version, roast_column *cols);

/* One observation of one worker. NaN marks a value the worker did not report. */
typedef struct roast_sample {
    double time; /* scheduler clock, seconds since epoch */
    double v[ROAST_NCOLS];
} roast_sample;

/* A stored point: one sample (count 1, min == max == mean) or a bucket. */
typedef struct roast_series_point {
    double t_first, t_last; /* times of the first and last sample covered */
    uint32_t count;         /* samples covered */
    double min[ROAST_NCOLS];
    double max[ROAST_NCOLS];
    double mean[ROAST_NCOLS];
} roast_series_point;

typedef struct roast_series roast_series;

/* cap_bytes bounds all memory the store holds (>= 64 KiB). epoch is the time
 * origin of the uint32 millisecond clock (samples before it are refused). */
roast_series *roast_series_new(size_t cap_bytes, double epoch);
void roast_series_free(roast_series *series);

/* Appends a sample for worker (an interned address). Samples of one worker
 * must come in non-decreasing time; others return ROAST_EINVAL. May fold old
 * data to stay under the cap; never exceeds it. */
roast_status roast_series_append(roast_series *series, roast_id worker, const roast_sample *sample);

/* Appends a stored point as is (used when reading a snapshot or a state file
 * back); folds like append when needed. A point with count 1 becomes a raw
 * sample, a larger count a bucket; reading back the points of a store and
 * restoring them into a new store with room for them gives the same points
 * bit for bit. A bucket after raw samples of the same worker, a point out of
 * time order and count 0 are refused (ROAST_EINVAL). */
roast_status roast_series_restore(roast_series *series, roast_id worker, const roast_series_point *point);

/* Workers with data, in order of first appearance: writes at most max ids
 * and returns the number of workers (so out = NULL, max = 0 counts them). */
size_t roast_series_workers(const roast_series *series, roast_id *out, size_t max);

/* Number of stored points of a worker, and random access to them in time order. */
size_t roast_series_points(const roast_series *series, roast_id worker);
roast_status roast_series_point_at(const roast_series *series, roast_id worker, size_t index,
                                   roast_series_point *out);

double roast_series_epoch(const roast_series *series);
size_t roast_series_cap_bytes(const roast_series *series);
size_t roast_series_bytes(const roast_series *series);     /* memory held now, <= cap */
uint64_t roast_series_samples(const roast_series *series); /* samples appended, ever */
uint64_t roast_series_folds(const roast_series *series);   /* decimation passes, ever */
uint64_t roast_series_refused(const roast_series *series); /* samples refused (EINVAL) */
uint64_t roast_series_dropped(const roast_series *series); /* samples dropped at the cap (EFULL) */

/* Sets the counters above, when restoring a store from a saved state. */
void roast_series_restore_counters(roast_series *series, uint64_t samples, uint64_t folds,
                                   uint64_t refused, uint64_t dropped);

#endif
