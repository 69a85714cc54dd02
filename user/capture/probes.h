/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* From mapped libraries to the list of probes: one per (library, file offset). */
#ifndef __PROBES_H
#define __PROBES_H

#include <stdbool.h>
#include <linux/types.h>
#include "catalog.h"
#include "targets.h"

struct probe {
	int lib;			/* index into targets.libs */
	const struct catalog_entry *entry;
	char *symbol;			/* exported name attached to */
	int nr_aliases;			/* other names at the same offset */
	__u64 offset;
	__u64 vaddr;
	bool attached;			/* entry (and return, if any) probe in place */
};

struct probe_set {
	struct probe *probes;		/* index = BPF cookie */
	int nr_probes;
	char (*build_ids)[41];		/* per library */
	int nr_libs;
};

/* Resolve every catalogue entry point in every library; 0 or -errno with err. */
int probes__resolve(const struct targets *t, struct probe_set *ps, char *err, size_t err_sz);
/* Resolve one more library (t->libs[lib], added after the others); 0 or -errno with err. */
int probes__resolve_lib(const struct targets *t, struct probe_set *ps, int lib, char *err,
			size_t err_sz);
/* Is a catalogue entry present (any variant) in library lib? */
bool probes__has_entry(const struct probe_set *ps, int lib, const struct catalog_entry *e);
/* Fill the header's library and probe tables (pointers into t and ps). */
void probes__fill_header(const struct targets *t, const struct probe_set *ps,
			 struct tf_header *hdr);
void probes__free(struct probe_set *ps);

#endif /* __PROBES_H */
