/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Arrays indexed by an id that grows: room up to an index, the new entries zeroed. */
#ifndef __GROW_H
#define __GROW_H

#include <stddef.h>

/* Make *arr (of *nr entries of size bytes) hold want entries; 0 or -ENOMEM (unchanged). */
int grow__zeroed(void **arr, size_t *nr, size_t want, size_t size);

#endif /* __GROW_H */
