// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "elfsyms.h"
#include "probes.h"

static struct probe *find_offset(struct probe_set *ps, int lib, __u64 offset)
{
	for (int i = ps->nr_probes - 1; i >= 0; i--)
		if (ps->probes[i].lib == lib && ps->probes[i].offset == offset)
			return &ps->probes[i];
	return NULL;
}

static int add_probe(struct probe_set *ps, int lib, const struct catalog_entry *e,
		     const struct elf_func *fn)
{
	struct probe *grown, *same = find_offset(ps, lib, fn->offset);

	/* aliases (pncclX, a _v2 that is the same code) share one probe */
	if (same) {
		same->nr_aliases++;
		return 0;
	}
	grown = realloc(ps->probes, (ps->nr_probes + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	ps->probes = grown;
	grown[ps->nr_probes] = (struct probe){
		.lib = lib,
		.entry = e,
		.symbol = strdup(fn->name),
		.offset = fn->offset,
		.vaddr = fn->vaddr,
	};
	if (!grown[ps->nr_probes].symbol)
		return -ENOMEM;
	ps->nr_probes++;
	return 0;
}

static int resolve_lib(struct probe_set *ps, const struct target_lib *tl, int lib, char *err,
		       size_t err_sz)
{
	struct elf_syms syms = { 0 };
	int ret = elf_syms__load(tl->open_path, &syms, err, err_sz);

	if (ret)
		return ret;
	memcpy(ps->build_ids[lib], syms.build_id, sizeof(syms.build_id));
	/* sorted by name, so ncclX comes before its alias pncclX and names the probe */
	for (size_t i = 0; i < syms.nr_funcs && !ret; i++) {
		const struct catalog_entry *e = catalog__match(syms.funcs[i].name, tl->kind);

		if (e)
			ret = add_probe(ps, lib, e, &syms.funcs[i]);
	}
	elf_syms__free(&syms);
	return ret;
}

int probes__resolve_lib(const struct targets *t, struct probe_set *ps, int lib, char *err,
			size_t err_sz)
{
	char(*grown)[41];

	if (lib >= ps->nr_libs) {
		grown = realloc(ps->build_ids, (lib + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		memset(grown + ps->nr_libs, 0, (lib + 1 - ps->nr_libs) * sizeof(*grown));
		ps->build_ids = grown;
		ps->nr_libs = lib + 1;
	}
	return resolve_lib(ps, &t->libs[lib], lib, err, err_sz);
}

int probes__resolve(const struct targets *t, struct probe_set *ps, char *err, size_t err_sz)
{
	for (int i = 0; i < t->nr_libs; i++) {
		int ret = probes__resolve_lib(t, ps, i, err, err_sz);

		if (ret)
			return ret;
	}
	return 0;
}

bool probes__has_entry(const struct probe_set *ps, int lib, const struct catalog_entry *e)
{
	for (int i = 0; i < ps->nr_probes; i++)
		if (ps->probes[i].lib == lib && ps->probes[i].entry == e)
			return true;
	return false;
}

void probes__fill_header(const struct targets *t, const struct probe_set *ps,
			 struct tf_header *hdr)
{
	hdr->nr_libs = t->nr_libs;
	hdr->libs = calloc(t->nr_libs ? t->nr_libs : 1, sizeof(*hdr->libs));
	hdr->nr_probes = ps->nr_probes;
	hdr->probes = calloc(ps->nr_probes ? ps->nr_probes : 1, sizeof(*hdr->probes));
	if (!hdr->libs || !hdr->probes) {
		hdr->nr_libs = hdr->nr_probes = 0;
		return;
	}
	for (int i = 0; i < t->nr_libs; i++) {
		hdr->libs[i].path = t->libs[i].path;
		memcpy(hdr->libs[i].build_id, ps->build_ids[i], sizeof(hdr->libs[i].build_id));
		hdr->libs[i].dev = t->libs[i].dev;
		hdr->libs[i].ino = t->libs[i].ino;
		hdr->libs[i].kind = t->libs[i].kind;
	}
	for (int i = 0; i < ps->nr_probes; i++) {
		const struct probe *p = &ps->probes[i];

		hdr->probes[i] = (struct tf_probe){
			.symbol = p->symbol,
			.lib = p->lib,
			.catalog = p->entry - catalog,
			.offset = p->offset,
			.vaddr = p->vaddr,
		};
	}
	hdr->nr_maps = t->nr_maps;
	hdr->maps = t->maps;
	hdr->nr_targets = t->nr_tgids;
	hdr->targets = t->tgids;
}

void probes__free(struct probe_set *ps)
{
	if (!ps)
		return;
	for (int i = 0; i < ps->nr_probes; i++)
		free(ps->probes[i].symbol);
	free(ps->probes);
	free(ps->build_ids);
	*ps = (struct probe_set){ 0 };
}
