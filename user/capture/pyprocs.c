// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Python interpreters of traced processes and the offsets their stacks are read with. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <bpf/bpf.h>
#include "elfsyms.h"
#include "log.h"
#include "pyprocs.h"

#define PY_DEBUG_COOKIE "xdebugpy"

/* A file mapped by the process that may hold the interpreter. */
struct py_candidate {
	char path[256];
	__u64 start;		/* the mapping of file offset 0 */
};

static struct py_proc *procs;
static size_t nr_procs, cap_procs;

int pyprocs__read(pid_t tgid, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(unsigned long)addr, .iov_len = len };
	ssize_t got;

	if (!addr)
		return -EFAULT;
	got = process_vm_readv(tgid, &local, 1, &remote, 1, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT;
}

/* 3.minor from a name such as python3.12, libpython3.12.so.1.0; 0 if none. */
static unsigned int minor_from_name(const char *base)
{
	const char *p = strstr(base, "python3.");
	char *end;
	long minor;

	if (!p)
		return 0;
	errno = 0;
	minor = strtol(p + strlen("python3."), &end, 10);
	if (errno || end == p + strlen("python3.") || minor <= 0 || minor > 99)
		return 0;
	return (unsigned int)minor;
}

static bool is_python_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython3", 10) || !strncmp(base, "python", 6);
}

/* libpython first (an executable that links it defines no _PyRuntime), then the rest. */
static int read_candidates(pid_t tgid, struct py_candidate *cands, int max)
{
	char maps[64], line[512 + PATH_MAX], path[PATH_MAX];
	unsigned long start, end, pgoff;
	int nr = 0, pos;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", tgid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && nr < max) {
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &pgoff, &pos) != 3)
			continue;
		if (sscanf(line + pos, "%4095[^\n]", path) != 1 || path[0] != '/' || pgoff)
			continue;
		if (!is_python_file(path) || strlen(path) >= sizeof(cands[0].path))
			continue;
		strcpy(cands[nr].path, path);
		cands[nr].start = start;
		if (strstr(path, "libpython") && nr > 0) {
			struct py_candidate first = cands[0];

			cands[0] = cands[nr];
			cands[nr] = first;
		}
		nr++;
	}
	fclose(f);
	return nr;
}

/* The address of symbol name in tgid, defined by the file of cand: 0 or -errno. */
static int symbol_addr(pid_t tgid, const struct py_candidate *cand, const char *name, __u64 *addr)
{
	char path[PATH_MAX];
	struct elf_object obj;
	int err;

	/* Through the process's root: the file as its mount namespace sees it. */
	snprintf(path, sizeof(path), "/proc/%d/root%s", tgid, cand->path);
	err = elf_syms__object(path, name, &obj);
	if (err)
		return err;
	*addr = cand->start - obj.load_vaddr + obj.vaddr;
	return 0;
}

/* The leading part of 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h). */
struct py313_debug_offsets {
	char cookie[8];
	__u64 version;
	__u64 free_threaded;
	struct { __u64 size, finalizing, interpreters_head; } runtime_state;
	struct {
		__u64 size, id, next, threads_head, gc, imports_modules, sysdict, builtins;
		__u64 ceval_gil, gil_runtime_state, gil_enabled, gil_locked, gil_holder;
	} interpreter_state;
	struct {
		__u64 size, prev, next, interp, current_frame, thread_id, native_thread_id;
		__u64 datastack_chunk, status;
	} thread_state;
	struct {
		__u64 size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		__u64 size, filename, name, qualname, linetable, firstlineno, argcount;
		__u64 localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct { __u64 size, ob_type; } pyobject;
	struct { __u64 size, tp_name, tp_repr, tp_flags; } type_object;
	struct { __u64 size, ob_item, ob_size; } tuple_object;
	struct { __u64 size, ob_item, ob_size; } list_object;
	struct { __u64 size, ma_keys, ma_values; } dict_object;
	struct { __u64 size, ob_fval; } float_object;
	struct { __u64 size, lv_tag, ob_digit; } long_object;
	struct { __u64 size, ob_size, ob_sval; } bytes_object;
	struct { __u64 size, state, length, asciiobject_size; } unicode_object;
};

static void apply_debug_threads(struct py_offsets *off, const struct py313_debug_offsets *d)
{
	off->runtime_interp_head = d->runtime_state.interpreters_head;
	off->interp_next = d->interpreter_state.next;
	off->interp_threads_head = d->interpreter_state.threads_head;
	off->tstate_next = d->thread_state.next;
	off->tstate_interp = d->thread_state.interp;
	off->tstate_thread_id = d->thread_state.thread_id;
	off->tstate_native_thread_id = d->thread_state.native_thread_id;
	off->tstate_frame = d->thread_state.current_frame;
	/* datastack_top is not described: it follows datastack_chunk as the table says */
	off->tstate_datastack_top += d->thread_state.datastack_chunk - off->tstate_datastack_chunk;
	off->tstate_datastack_chunk = d->thread_state.datastack_chunk;
	off->cframe_current_frame = PYOFF_NONE;
	off->frame_size = d->interpreter_frame.size;
	off->frame_previous = d->interpreter_frame.previous;
	off->frame_code = d->interpreter_frame.executable;
	off->frame_instr = d->interpreter_frame.instr_ptr;
	off->frame_owner = d->interpreter_frame.owner;
}

static void apply_debug_objects(struct py_offsets *off, const struct py313_debug_offsets *d)
{
	off->code_filename = d->code_object.filename;
	off->code_name = d->code_object.name;
	off->code_qualname = d->code_object.qualname;
	off->code_firstlineno = d->code_object.firstlineno;
	off->code_linetable = d->code_object.linetable;
	off->code_bytecode = d->code_object.co_code_adaptive;
	off->object_type = d->pyobject.ob_type;
	off->type_name = d->type_object.tp_name;
	off->bytes_size = d->bytes_object.ob_size;
	off->bytes_data = d->bytes_object.ob_sval;
	off->unicode_length = d->unicode_object.length;
	off->unicode_state = d->unicode_object.state;
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject. */
	off->unicode_compact_size = d->unicode_object.asciiobject_size + 16;
	off->unicode_ascii_size = d->unicode_object.asciiobject_size;
}

/* Every offset after the header is small: a struct read from elsewhere is not. */
static bool debug_offsets_sane(const struct py313_debug_offsets *d)
{
	const __u64 *word = &d->runtime_state.size;
	size_t i, nr = (sizeof(*d) - offsetof(struct py313_debug_offsets, runtime_state)) / 8;

	for (i = 0; i < nr; i++)
		if (word[i] >= 1 << 20)
			return false;
	return true;
}

/*
 * 3.13 describes itself: offsets from _PyRuntime.debug_offsets; the table row only
 * supplies what it leaves out (the C-stack owner value, the state bit positions).
 */
static int read_debug_offsets(struct py_proc *proc, char *err, size_t err_sz)
{
	struct py313_debug_offsets d;
	int ret = pyprocs__read(proc->tgid, proc->runtime, &d, sizeof(d));

	if (ret) {
		snprintf(err, err_sz, "cannot read _PyRuntime.debug_offsets of pid %d: %s",
			 proc->tgid, strerror(-ret));
		return ret;
	}
	if (memcmp(d.cookie, PY_DEBUG_COOKIE, sizeof(d.cookie)) ||
	    (d.version >> 16) != (proc->version >> 16)) {
		snprintf(err, err_sz, "pid %d: _PyRuntime.debug_offsets has no %s cookie for 3.%u",
			 proc->tgid, PY_DEBUG_COOKIE, (proc->version >> 16) & 0xff);
		return -EPROTONOSUPPORT;
	}
	if (!debug_offsets_sane(&d)) {
		snprintf(err, err_sz, "pid %d: _PyRuntime.debug_offsets holds implausible offsets",
			 proc->tgid);
		return -EPROTONOSUPPORT;
	}
	if (d.free_threaded) {
		snprintf(err, err_sz, "pid %d: free-threaded CPython is not supported", proc->tgid);
		return -EPROTONOSUPPORT;
	}
	apply_debug_threads(&proc->off, &d);
	apply_debug_objects(&proc->off, &d);
	proc->version = d.version;
	proc->debug_offsets = true;
	return 0;
}

/* PY_VERSION_HEX from Py_Version (3.11+), else 3.minor from the file's name. */
static unsigned int read_version(pid_t tgid, const struct py_candidate *cand)
{
	const char *base = strrchr(cand->path, '/');
	unsigned long hex;
	__u64 addr;

	if (!symbol_addr(tgid, cand, "Py_Version", &addr) &&
	    !pyprocs__read(tgid, addr, &hex, sizeof(hex)) && (hex >> 24) == 3)
		return (unsigned int)hex;
	return 0x03000000 | minor_from_name(base ? base + 1 : cand->path) << 16;
}

static int offsets_for_version(struct py_proc *proc, char *err, size_t err_sz)
{
	unsigned int minor = (proc->version >> 16) & 0xff;
	const struct py_offsets *row = py_offsets__table(minor);

	if (!row || minor < 10 || minor > 13) {
		snprintf(err, err_sz, "pid %d: CPython 3.%u is not supported (3.10-3.13 are)",
			 proc->tgid, minor);
		return -EPROTONOSUPPORT;
	}
	proc->off = *row;
	if (minor >= 13)
		return read_debug_offsets(proc, err, err_sz);
	return 0;
}

/*
 * Offsets taken from another patch release's headers may not fit: the first
 * thread state of the first interpreter must point back at that interpreter.
 * Before the interpreter exists there is nothing to check.
 */
static int check_live(struct py_proc *proc, char *err, size_t err_sz)
{
	const struct py_offsets *off = &proc->off;
	__u64 interp, tstate, back;

	if (pyprocs__read(proc->tgid, proc->runtime + off->runtime_interp_head, &interp, 8) ||
	    !interp || pyprocs__read(proc->tgid, interp + off->interp_threads_head, &tstate, 8) ||
	    !tstate)
		return 0;
	if (!pyprocs__read(proc->tgid, tstate + off->tstate_interp, &back, 8) && back == interp)
		return 0;
	snprintf(err, err_sz, "pid %d: CPython %x does not fit the offsets of 3.%u.%u's headers",
		 proc->tgid, proc->version, off->minor, off->micro);
	return -EPROTONOSUPPORT;
}

int pyprocs__probe(pid_t tgid, struct py_proc *proc, char *err, size_t err_sz)
{
	struct py_candidate cands[8];
	int nr, i, ret;

	memset(proc, 0, sizeof(*proc));
	proc->tgid = tgid;
	nr = read_candidates(tgid, cands, 8);
	if (nr < 0) {
		snprintf(err, err_sz, "cannot read the mappings of pid %d: %s", tgid,
			 strerror(-nr));
		return nr;
	}
	for (i = 0; i < nr; i++) {
		if (symbol_addr(tgid, &cands[i], "_PyRuntime", &proc->runtime))
			continue;
		memcpy(proc->path, cands[i].path, sizeof(proc->path));
		proc->version = read_version(tgid, &cands[i]);
		ret = offsets_for_version(proc, err, err_sz);
		return ret ? ret : check_live(proc, err, err_sz);
	}
	snprintf(err, err_sz, "pid %d maps no CPython defining _PyRuntime", tgid);
	return -ENOENT;
}

static unsigned int frame_read_len(const struct py_offsets *off, bool lasti)
{
	unsigned int len = off->frame_previous + 8;

	if (off->frame_code + 8 > len)
		len = off->frame_code + 8;
	if (off->frame_instr + (lasti ? 4 : 8) > len)
		len = off->frame_instr + (lasti ? 4 : 8);
	if (off->frame_owner != PYOFF_NONE && off->frame_owner + 1 > len)
		len = off->frame_owner + 1;
	return len;
}

/* The 16-bit fields of the BPF config, all checked to fit. */
static bool fits16(const unsigned int *vals, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (vals[i] > 0xffff)
			return false;
	return true;
}

int pyprocs__config(const struct py_proc *proc, struct sp_py_config *cfg)
{
	const struct py_offsets *off = &proc->off;
	bool lasti = ((proc->version >> 16) & 0xff) < 11;
	unsigned int id = lasti ? off->tstate_thread_id : off->tstate_native_thread_id;
	unsigned int vals[] = {
		off->runtime_interp_head, off->interp_next, off->interp_threads_head,
		off->tstate_next, id, off->tstate_frame, off->cframe_current_frame,
		off->frame_previous, off->frame_code, off->frame_instr, off->frame_owner,
		off->code_bytecode,
	};

	memset(cfg, 0, sizeof(*cfg));
	if (!fits16(vals, sizeof(vals) / sizeof(vals[0])) ||
	    frame_read_len(off, lasti) > SP_PY_FRAME_READ)
		return -E2BIG;
	cfg->runtime = proc->runtime;
	cfg->version = proc->version;
	cfg->runtime_interp_head = off->runtime_interp_head;
	cfg->interp_next = off->interp_next;
	cfg->interp_threads_head = off->interp_threads_head;
	cfg->tstate_next = off->tstate_next;
	cfg->tstate_id = id;
	cfg->tstate_frame = off->tstate_frame;
	cfg->cframe_current_frame = off->cframe_current_frame;
	cfg->frame_previous = off->frame_previous;
	cfg->frame_code = off->frame_code;
	cfg->frame_instr = off->frame_instr;
	cfg->frame_owner = off->frame_owner;
	cfg->frame_read = frame_read_len(off, lasti);
	cfg->code_bytecode = lasti ? 0 : off->code_bytecode;
	cfg->id_kind = lasti ? SP_PY_ID_FSBASE : SP_PY_ID_TID;
	cfg->instr_kind = lasti ? SP_PY_INSTR_LASTI : SP_PY_INSTR_PTR;
	cfg->owner_cstack = off->owner_cstack < 0 ? 0xff : off->owner_cstack;
	/* one read gives both pointers; frames at other places are read one by one */
	cfg->tstate_datastack = SP_PYOFF_NONE;
	if (!lasti && off->tstate_datastack_chunk <= 0xffff && off->chunk_data <= 0xffff &&
	    off->tstate_datastack_top == off->tstate_datastack_chunk + 8) {
		cfg->tstate_datastack = off->tstate_datastack_chunk;
		cfg->chunk_data = off->chunk_data;
	}
	return 0;
}

/* A process in a child PID namespace stores thread ids the kernel's view does not match. */
static bool in_child_pid_ns(pid_t tgid)
{
	char path[64], line[256];
	bool nested = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tgid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			nested = strchr(line + 6, '\t') != strrchr(line + 6, '\t');
			break;
		}
	}
	fclose(f);
	return nested;
}

static struct py_proc *slot_for(pid_t tgid)
{
	struct py_proc *grown;
	size_t i;

	for (i = 0; i < nr_procs; i++)
		if (procs[i].tgid == tgid)
			return &procs[i];
	if (nr_procs == cap_procs) {
		size_t cap = cap_procs ? 2 * cap_procs : 16;

		grown = realloc(procs, cap * sizeof(*procs));
		if (!grown)
			return NULL;
		procs = grown;
		cap_procs = cap;
	}
	return &procs[nr_procs++];
}

int pyprocs__add(int map_fd, pid_t tgid)
{
	struct sp_py_config cfg;
	struct py_proc proc, *slot;
	__u32 key = tgid;
	char err[256];
	int ret;

	ret = pyprocs__probe(tgid, &proc, err, sizeof(err));
	if (ret)
		pyprocs__remove(map_fd, tgid);	/* an exec'd image: the old config is stale */
	if (ret == -ENOENT)
		return ret;
	if (ret) {
		log_warn("Python stacks: %s", err);
		return ret;
	}
	ret = pyprocs__config(&proc, &cfg);
	if (ret) {
		log_warn("Python stacks: pid %d: offsets of %s too large for the reader", tgid,
			 proc.path);
		return ret;
	}
	if (in_child_pid_ns(tgid) && proc.version >= 0x030b0000)
		log_warn("Python stacks: pid %d is in a child PID namespace: its threads' ids "
			 "differ from the kernel's, stacks stay empty", tgid);
	slot = slot_for(tgid);
	if (!slot)
		return -ENOMEM;
	*slot = proc;
	if (bpf_map_update_elem(map_fd, &key, &cfg, BPF_ANY)) {
		ret = -errno;
		pyprocs__remove(-1, tgid);
		return ret;
	}
	log_debug("Python stacks: pid %d runs CPython %x (%s, offsets from %s)", tgid,
		  proc.version, proc.path, proc.debug_offsets ? "_Py_DebugOffsets" : "its headers");
	return 0;
}

const struct py_proc *pyprocs__find(pid_t tgid)
{
	size_t i;

	for (i = 0; i < nr_procs; i++)
		if (procs[i].tgid == tgid)
			return &procs[i];
	return NULL;
}

void pyprocs__remove(int map_fd, pid_t tgid)
{
	__u32 key = tgid;
	size_t i;

	for (i = 0; i < nr_procs; i++) {
		if (procs[i].tgid == tgid) {
			procs[i] = procs[--nr_procs];
			break;
		}
	}
	if (map_fd >= 0)
		bpf_map_delete_elem(map_fd, &key);
}
