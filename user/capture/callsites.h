/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What a stack record needs before it goes into a recording: an SP_REC_OBJMAP
 * for each executable mapping its native frames name and an SP_REC_PYCODE for
 * each Python code object, each once per process.
 */
#ifndef __CALLSITES_H
#define __CALLSITES_H

#include <stddef.h>
#include <linux/types.h>
#include "session.h"

struct callsites;

struct callsites *callsites__new(void);
/* Read tgid's executable mappings now, while it runs (a stack may come after it exits). */
void callsites__note_process(struct callsites *cs, __u32 tgid);
/* tgid exited: a process given its pid later is another one. */
void callsites__forget(struct callsites *cs, __u32 tgid);
/*
 * tgid ran execve: nothing known of its old image names the new one's frames.
 * Its new mappings are read now, and again at the first frame they miss.
 */
void callsites__exec(struct callsites *cs, __u32 tgid);
/*
 * Hand the records the stack rec (size bytes) needs to emit, before the
 * stack itself; 0, emit's non-zero value, or -EBADMSG for a malformed stack.
 */
int callsites__prepare(struct callsites *cs, const void *rec, size_t size,
		       session_record_fn emit, void *ctx);
void callsites__free(struct callsites *cs);

#endif /* __CALLSITES_H */
