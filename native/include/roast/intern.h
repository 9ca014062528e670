/* intern: strings -> small dense ids, stable for the table's lifetime.
 *
 * Worker addresses, task prefixes, span ids, metric contexts, activities and
 * units are few and repeat millions of times; the tables store ids. Id 0 is
 * the empty string. The table owns copies of its strings. */
#ifndef ROAST_INTERN_H
#define ROAST_INTERN_H

#include "roast/common.h"

typedef struct roast_intern roast_intern;

/* max_strings bounds the table (including the empty string); at the bound,
 * roast_intern_put returns ROAST_EFULL and counts an overflow. */
roast_intern *roast_intern_new(uint32_t max_strings);
void roast_intern_free(roast_intern *table);

/* Finds or adds s (any bytes, may contain NUL) and stores its id in *id. */
roast_status roast_intern_put(roast_intern *table, const char *s, size_t len, roast_id *id);

/* Strings of unbounded variety (task prefixes) must not crowd out those the
 * tables cannot do without (span ids, worker addresses). Once the table holds
 * soft_cap strings, roast_intern_put_foldable does not add a new string: it
 * gives the id of the bucket string `bucket` (a static string, interned at
 * the first fold) and counts a fold. Strings already held are found as usual. */
void roast_intern_set_fold(roast_intern *table, uint32_t soft_cap, const char *bucket);

/* roast_intern_put, folding beyond the soft bound (plain put without one). */
roast_status roast_intern_put_foldable(roast_intern *table, const char *s, size_t len,
                                       roast_id *id);

/* Finds s without adding it; returns false when absent. */
int roast_intern_find(const roast_intern *table, const char *s, size_t len, roast_id *id);

/* The string of an id (NUL-terminated copy owned by the table), or an empty
 * view for an unknown id. */
roast_str roast_intern_get(const roast_intern *table, roast_id id);

uint32_t roast_intern_count(const roast_intern *table);     /* strings held, incl. "" */
uint64_t roast_intern_overflows(const roast_intern *table); /* puts refused at the bound */
uint64_t roast_intern_folds(const roast_intern *table);     /* foldable puts folded */
size_t roast_intern_bytes(const roast_intern *table);       /* memory held, approximate */

#endif
