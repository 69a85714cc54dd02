/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Process-wide malloc tuning for commands that read recordings: reading touches
 * fresh memory at about 100 bytes a record (the model, the analyses' arrays), and
 * on virtual machines a 4 KiB page fault costs more than the work done in it.
 */
#ifndef __HEAP_H
#define __HEAP_H

/* Keep large blocks on one heap that asks for transparent huge pages. Only a hint. */
void heap__tune(void);

#endif /* __HEAP_H */
