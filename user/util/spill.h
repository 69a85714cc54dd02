/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Records kept on disk while a recording is read: temporary files gone at exit. */
#ifndef __SPILL_H
#define __SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A temporary file in spill__dir(), removed already; NULL with errno set. */
FILE *spill__open(void);
/* Append a record, opening *f first if NULL; 0 or -errno. */
int spill__write(FILE **f, const void *rec, size_t size);
/* What is buffered, written out; 0 or -errno. */
int spill__flush(FILE *f);
/* $TMPDIR, else /tmp. */
const char *spill__dir(void);
/* Did opening or writing one fail (a full disk): the error is the folder's, not the input's. */
bool spill__failed(void);

#endif /* __SPILL_H */
