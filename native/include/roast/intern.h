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

/* Finds s without adding it; returns false when absent. */
int roast_intern_find(const roast_intern *table, const char *s, size_t len, roast_id *id);

/* The string of an id (NUL-terminated copy owned by the table), or an empty
 * view for an unknown id. */
roast_str roast_intern_get(const roast_intern *table, roast_id id);

uint32_t roast_intern_count(const roast_intern *table);     /* strings held, incl. "" */
uint64_t roast_intern_overflows(const roast_intern *table); /* puts refused at the bound */
size_t roast_intern_bytes(const roast_intern *table);       /* memory held, approximate */

#endif
