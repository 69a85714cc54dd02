// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One entry handler and one return handler for every probed entry point
 * (or one session handler for both, where the kernel has uprobe sessions):
 * the attach cookie indexes the per-probe spec that says which stack words,
 * which pointee and which output pointer to read.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "specprobe.h"
#include "pystack.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Ring data (bytes) above which a submit wakes the reader. */
const volatile __u64 wake_bytes = 1 << 20;
/*
 * Least time between two wakeups by the fill threshold. A wakeup runs in the
 * traced thread (irq_work, a self-IPI: about 5 us in a VM), so no other record
 * wakes the reader: it polls with a 100 ms timeout and drains the ring after
 * every poll, which bounds how late a blocked call is seen.
 */
const volatile __u64 fill_wake_gap_ns = 1000000;

/*
 * Set by user space where the return probes are session programs, so an entry
 * can leave its return out: async copies of pinned memory are then entry only.
 * A variable, not a constant, so a benchmark can flip it in a running tracer.
 */
__u64 quiet_pinned;

/*
 * --sample: a windowed probe's hit is recorded only inside the window's own
 * edges, each set by user space before it comes; outside them (while its link
 * goes in or out) it takes no call number, so the numbering has no gap.
 */
__u64 window_from_ns = ~0ULL;
__u64 window_to_ns = ~0ULL;

/* When a probe last woke the reader (racy across CPUs: a bound, not a count). */
__u64 last_wake_ns;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 26);	/* resized from user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_MAX_PROBES);	/* index = probe cookie */
	__type(key, __u32);
	__type(value, struct sp_probe_spec);
} specs SEC(".maps");

/*
 * Traced tgids, one bit per pid up to the kernel's limit: every hit of every
 * process mapping a probed library asks, and a load beats a hash lookup.
 */
__u64 traced_bits[SP_PID_LIMIT / 64];

/*
 * Pids stay below SP_PID_LIMIT; the mask is the bound the verifier sees, and
 * the barrier keeps the compiler from folding it away.
 */
static __always_inline __u64 *traced_word(__u32 tgid)
{
	__u32 w = tgid / 64;

	barrier_var(w);
	return &traced_bits[w & (SP_PID_LIMIT / 64 - 1)];
}

static __always_inline bool is_traced(__u32 tgid)
{
	return *traced_word(tgid) & (1ULL << (tgid & 63));
}

static __always_inline void set_traced(__u32 tgid, bool on)
{
	__u64 *w = traced_word(tgid);

	if (on)
		__sync_fetch_and_or(w, 1ULL << (tgid & 63));
	else
		__sync_fetch_and_and(w, ~(1ULL << (tgid & 63)));
}

/* Per traced process: the pinned host memory its copies may use (struct sp_pinned_set). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_PY_PROCS);
	__type(key, __u32);		/* tgid */
	__type(value, struct sp_pinned_set);
} pinned SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_CNT_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct frame {
	__u64 sp;		/* stack pointer at entry: the return address slot */
	__u64 out_ptr;		/* output pointer argument, read at return */
	__u64 ret_addr;		/* entry-only kinds: the return address; 0 otherwise */
	__u64 pin_bytes;	/* SP_SPEC_PINS: the bytes asked for */
	__u32 seq;
	__u32 probe;
};

struct thread_state {
	__u32 next_seq;
	__u32 depth;
	__u32 after_launch;	/* its last probed call was a kernel launch */
	__u32 pad;
	__u64 lead_stack_ns;	/* when a burst's first launch last took its stack */
	struct frame frames[SP_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);		/* tid */
	__type(value, struct thread_state);
} threads SEC(".maps");

static const struct thread_state empty_thread;

/* SP_MAX_DEPTH is a power of two: masking gives the verifier a bound it can see. */
#define FRAME(ts, i) (&(ts)->frames[(i) & (SP_MAX_DEPTH - 1)])

static __always_inline void count(__u32 idx)
{
	__u64 *val = bpf_map_lookup_elem(&counters, &idx);

	if (val)
		*val += 1;
}

/* now: the record's timestamp. */
static __always_inline __u64 submit_flags(__u64 now)
{
	if (now - last_wake_ns < fill_wake_gap_ns ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) <= wake_bytes)
		return BPF_RB_NO_WAKEUP;
	last_wake_ns = now;
	return BPF_RB_FORCE_WAKEUP;
}

/*
 * A thread's first hit: how long it has waited for a CPU so far. Against the
 * figure specprobe read before the attach mark, it tells how much of the time
 * from the mark to this record the thread spent runnable but not running.
 */
static __always_inline void note_first_hit(__u64 id)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct sp_runq_rec *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

	if (!rec)
		return;
	rec->type = SP_REC_RUNQ;
	rec->size = sizeof(*rec);
	rec->tgid = id >> 32;
	rec->tid = (__u32)id;
	rec->when = SP_RUNQ_FIRST_HIT;
	rec->ts = bpf_ktime_get_ns();
	rec->run_delay_ns = BPF_CORE_READ(task, sched_info.run_delay);
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
}

static __always_inline struct thread_state *thread_get(__u64 id)
{
	__u32 tid = (__u32)id;
	struct thread_state *ts = bpf_map_lookup_elem(&threads, &tid);

	if (ts)
		return ts;
	if (!bpf_map_update_elem(&threads, &tid, &empty_thread, BPF_NOEXIST))
		note_first_hit(id);
	return bpf_map_lookup_elem(&threads, &tid);
}

/*
 * Is the call of frame f still running when a call is entered at sp? A frame
 * at or below sp has returned. An entry-only call has no return probe to pop
 * it, so it counts as running only while its return address still sits in
 * its slot: once it returns, the next call from its caller reuses the slot.
 */
static __always_inline bool frame_live(const struct frame *f, __u64 sp, bool check_slot)
{
	__u64 slot;

	if (f->sp <= sp)
		return false;
	if (!check_slot || !f->ret_addr)
		return true;
	if (bpf_probe_read_user(&slot, sizeof(slot), (void *)f->sp))
		return false;
	return slot == f->ret_addr;
}

/* Pop the frames of calls that are no longer running. */
static __always_inline void unwind(struct thread_state *ts, __u64 sp, bool check_slots)
{
	for (int i = 0; i < SP_MAX_DEPTH; i++) {
		__u32 top = ts->depth;

		if (top == 0 || top > SP_MAX_DEPTH)
			break;
		if (frame_live(FRAME(ts, top - 1), sp, check_slots))
			break;
		ts->depth = top - 1;
	}
}

/* A frame that no return probe will pop: liveness is checked through its slot. */
static __always_inline bool entry_only_frame(const struct sp_probe_spec *spec)
{
	return (spec->flags & (SP_SPEC_ENCLOSES | SP_SPEC_COMPLETION)) == SP_SPEC_ENCLOSES;
}

/* Argument idx (0..8) of the call; 0 for SP_NO_ARG. */
static __always_inline __u64 call_arg(const __u64 *args, __u8 idx)
{
	return idx < SP_MAX_ARGS ? args[idx & 15] : 0;
}

/*
 * The call's arguments into args[SP_MAX_ARGS]: six registers, then the stack
 * words the spec asks for; [sp] is the return address, arguments 7..9 follow:
 * one read for both. Returns the fault bits.
 */
static __always_inline __u8 read_args(struct pt_regs *ctx, const struct sp_probe_spec *spec,
				      __u64 *args, __u64 *ret_addr)
{
	__u64 words[1 + SP_STACK_ARGS];

	args[0] = ctx->di;
	args[1] = ctx->si;
	args[2] = ctx->dx;
	args[3] = ctx->cx;
	args[4] = ctx->r8;
	args[5] = ctx->r9;
	args[6] = args[7] = args[8] = 0;
	*ret_addr = 0;
	if (!spec->stack_args && !entry_only_frame(spec))
		return 0;
	if (bpf_probe_read_user(words, sizeof(words), (void *)ctx->sp)) {
		if (!spec->stack_args)
			return 0;
		count(SP_CNT_FAULT_BASE + SP_FAULT_STACK);
		return 1 << SP_FAULT_STACK;
	}
	if (entry_only_frame(spec))
		*ret_addr = words[0];
	args[6] = words[1];
	args[7] = words[2];
	args[8] = words[3];
	return 0;
}

static __always_inline void fill_head(struct sp_call_pkt *rec, __u16 size, __u8 flags,
				      const struct sp_probe_spec *spec, __u32 probe, __u64 id)
{
	rec->type = SP_REC_CALL_PACKED;
	rec->size = size;
	rec->probe = probe;
	rec->flags = flags | (spec->flags & SP_SPEC_COMPLETION ? SP_PKT_HAS_RET : 0);
	rec->ts = bpf_ktime_get_ns();
	rec->tgid = id >> 32;
	rec->tid = (__u32)id;
}

/* The first n words of the arguments; n is a constant at each call site. */
static __always_inline void put_words(struct sp_call_pkt *rec, const __u64 *args, int n)
{
	__u64 *w = (__u64 *)(rec + 1);

	for (int i = 0; i < n; i++)
		w[i] = args[i];
}

/* A launch: the function, grid, block and shared memory as 32-bit words, the stream. */
static __always_inline void put_dims(struct sp_call_pkt *rec, const __u64 *args)
{
	__u64 *w = (__u64 *)(rec + 1);
	__u32 *dims = (__u32 *)&w[1];

	w[0] = args[0];
	for (int i = 0; i < 7; i++)
		dims[i] = args[1 + i];
	dims[7] = 0;
	w[5] = args[8];
}

#define PKT(words, data) (sizeof(struct sp_call_pkt) + 8 * (words) + (data))

/* Copy the pointee of the data argument after the words; len is a constant. */
static __always_inline __u8 put_data(void *dst, const struct sp_probe_spec *spec,
				     const __u64 *args, __u32 len)
{
	void *ptr = (void *)call_arg(args, spec->data_arg);
	long err;

	if (spec->flags & SP_SPEC_DATA_STR)
		err = bpf_probe_read_user_str(dst, len, ptr) < 0;
	else
		err = bpf_probe_read_user(dst, len, ptr);
	if (!err)
		return 0;
	__builtin_memset(dst, 0, len);
	count(SP_CNT_FAULT_BASE + SP_FAULT_DATA);
	return 1 << SP_FAULT_DATA;
}

/*
 * Reserve and fill the record: as many words as the catalogue names arguments
 * (in steps, so each size is a constant for the verifier), or a launch's packed
 * dimensions, then the data.
 */
static __always_inline struct sp_call_pkt *emit_call(const struct sp_probe_spec *spec, __u32 probe,
						     __u64 id, const __u64 *args, __u8 faults)
{
	__u8 flags = faults << SP_PKT_FAULT_SHIFT;
	struct sp_call_pkt *rec;

	if (spec->data_len == SP_DATA_LARGE) {
		rec = bpf_ringbuf_reserve(&events, PKT(SP_MAX_ARGS, SP_DATA_LARGE), 0);
		if (!rec)
			return NULL;
		put_words(rec, args, SP_MAX_ARGS);
		flags |= put_data((__u64 *)(rec + 1) + SP_MAX_ARGS, spec, args, SP_DATA_LARGE)
			 << SP_PKT_FAULT_SHIFT;
		fill_head(rec, PKT(SP_MAX_ARGS, SP_DATA_LARGE), flags | SP_PKT_DATA_LARGE, spec,
			  probe, id);
	} else if (spec->data_len == SP_DATA_SMALL && spec->nr_args > 2) {
		rec = bpf_ringbuf_reserve(&events, PKT(SP_MAX_ARGS, SP_DATA_SMALL), 0);
		if (!rec)
			return NULL;
		put_words(rec, args, SP_MAX_ARGS);
		flags |= put_data((__u64 *)(rec + 1) + SP_MAX_ARGS, spec, args, SP_DATA_SMALL)
			 << SP_PKT_FAULT_SHIFT;
		fill_head(rec, PKT(SP_MAX_ARGS, SP_DATA_SMALL), flags | SP_PKT_DATA_SMALL, spec,
			  probe, id);
	} else if (spec->data_len == SP_DATA_SMALL) {
		/* cuLaunchKernelEx: the config pointer and the function, then the config */
		rec = bpf_ringbuf_reserve(&events, PKT(2, SP_DATA_SMALL), 0);
		if (!rec)
			return NULL;
		put_words(rec, args, 2);
		flags |= put_data((__u64 *)(rec + 1) + 2, spec, args, SP_DATA_SMALL)
			 << SP_PKT_FAULT_SHIFT;
		fill_head(rec, PKT(2, SP_DATA_SMALL), flags | SP_PKT_DATA_SMALL, spec, probe, id);
	} else if (spec->flags & SP_SPEC_DIMS) {
		rec = bpf_ringbuf_reserve(&events, PKT(6, 0), 0);
		if (!rec)
			return NULL;
		put_dims(rec, args);
		fill_head(rec, PKT(6, 0), flags | SP_PKT_DIMS, spec, probe, id);
	} else if (spec->nr_args <= 2) {
		rec = bpf_ringbuf_reserve(&events, PKT(2, 0), 0);
		if (!rec)
			return NULL;
		put_words(rec, args, 2);
		fill_head(rec, PKT(2, 0), flags, spec, probe, id);
	} else if (spec->nr_args <= 4) {
		rec = bpf_ringbuf_reserve(&events, PKT(4, 0), 0);
		if (!rec)
			return NULL;
		put_words(rec, args, 4);
		fill_head(rec, PKT(4, 0), flags, spec, probe, id);
	} else if (spec->nr_args <= 6) {
		rec = bpf_ringbuf_reserve(&events, PKT(6, 0), 0);
		if (!rec)
			return NULL;
		put_words(rec, args, 6);
		fill_head(rec, PKT(6, 0), flags, spec, probe, id);
	} else {
		rec = bpf_ringbuf_reserve(&events, PKT(SP_MAX_ARGS, 0), 0);
		if (!rec)
			return NULL;
		put_words(rec, args, SP_MAX_ARGS);
		fill_head(rec, PKT(SP_MAX_ARGS, 0), flags, spec, probe, id);
	}
	return rec;
}

/*
 * Scratch for one stack record: a header, then words for the native return
 * addresses (one more than a record holds, see emit_stack); Python frames are
 * read into the words after those and moved down behind the native ones.
 */
#define PY_WORD		(SP_STACK_NATIVE + 1)
#define STACK_WORDS	(PY_WORD + 2 * SP_STACK_PY)

/* What a call site is known by when it repeats (SP_STACK_SAME). */
struct stack_key {
	__u64 ips[SP_STACK_KEY_NATIVE];
	struct sp_py_frame py[SP_STACK_KEY_PY];
	__u32 nr_py;
	__u32 tid;
};

struct stack_scratch {
	struct sp_stack_rec hdr;
	__u64 words[STACK_WORDS];
	struct stack_key key;
};

/* A caller's frame lies above its callee's and, on any stack we walk, within this. */
#define FRAME_SPAN	(8ULL << 20)

/* Walk a site again after this long, so a record that was lost is not missed for long. */
#define STACK_SAME_NS	1000000000ULL

/* Call sites walked in the last STACK_SAME_NS: key -> when. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct stack_key);
	__type(value, __u64);
} stack_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

/* The Python frames, from words[PY_WORD] down to words[to]. */
static __always_inline void pack_py(struct stack_scratch *s, __u32 to, __u32 nr_py)
{
	for (__u32 j = 0; j < 2 * SP_STACK_PY; j++) {
		if (j >= 2 * nr_py || to + j >= STACK_WORDS)
			break;
		s->words[to + j] = s->words[PY_WORD + j];
	}
}

/*
 * The innermost native frames: the return address at [sp], then up the frame
 * pointers as the kernel's walk goes; and the innermost Python frame. Returns
 * the native frames found (0: not even [sp]).
 */
static __always_inline __u32 stack_key_fill(struct pt_regs *ctx, struct stack_scratch *s,
					    __u32 tid)
{
	struct stack_key *k = &s->key;
	__u64 below = ctx->sp, fp = ctx->bp, pair[2];
	__u32 n = 1;

	__builtin_memset(k, 0, sizeof(*k));
	k->tid = tid;
	if (bpf_probe_read_user(&k->ips[0], 8, (void *)ctx->sp))
		return 0;
	/*
	 * pair: the caller's frame pointer, then its return address, up the chain
	 * as the kernel's walk goes, so the key is the start of the whole stack the
	 * reader matches it with. It stops sooner where rbp cannot be a frame of
	 * this stack (code built without frame pointers keeps data there): a read
	 * that faults costs microseconds, and every repeated call would pay it.
	 */
	for (int i = 1; i < SP_STACK_KEY_NATIVE; i++) {
		if (fp <= below || fp - below > FRAME_SPAN || (fp & 7) ||
		    bpf_probe_read_user(pair, sizeof(pair), (void *)fp))
			break;
		k->ips[i] = pair[1];
		n++;
		below = fp;
		fp = pair[0];
	}
	k->nr_py = py_stack_read((struct sp_py_frame *)&s->words[PY_WORD], SP_STACK_KEY_PY);
	if (k->nr_py > SP_STACK_KEY_PY)
		k->nr_py = SP_STACK_KEY_PY;
	for (int i = 0; i < SP_STACK_KEY_PY; i++) {
		if (i >= k->nr_py)
			break;
		k->py[i].code = s->words[PY_WORD + 2 * i];
		k->py[i].instr = (__u32)s->words[PY_WORD + 2 * i + 1];
		k->py[i].depth_mark = s->words[PY_WORD + 2 * i + 1] >> 32;
	}
	return n;
}

static __always_inline void stack_head(struct sp_stack_rec *rec, __u32 size, __u64 id, __u32 seq,
				       __u32 nr_native, __u32 nr_py, __u32 flags)
{
	rec->type = SP_REC_STACK;
	rec->size = size;
	rec->tgid = id >> 32;
	rec->tid = (__u32)id;
	rec->seq = seq;
	rec->nr_native = nr_native;
	rec->nr_py = nr_py;
	rec->flags = flags;
}

/* A repeated site's record: the key's frames only, flagged SP_STACK_SAME. */
static __always_inline bool emit_same(struct stack_scratch *s, __u32 n, __u64 id, __u32 seq)
{
	struct sp_stack_rec *rec = &s->hdr;
	__u32 nr_py = s->key.nr_py, size;

	for (int i = 0; i < SP_STACK_KEY_NATIVE; i++)
		s->words[i] = s->key.ips[i];
	n &= SP_STACK_KEY_NATIVE * 2 - 1;
	if (n > SP_STACK_KEY_NATIVE || nr_py > SP_STACK_KEY_PY)
		return false;
	for (int i = 0; i < SP_STACK_KEY_PY; i++) {
		if (i >= nr_py)
			break;
		s->words[n + 2 * i] = s->key.py[i].code;
		s->words[n + 2 * i + 1] =
			s->key.py[i].instr | (__u64)s->key.py[i].depth_mark << 32;
	}
	size = sizeof(*rec) + 8 * n + 16 * nr_py;
	stack_head(rec, size, id, seq, n, nr_py, SP_STACK_SAME);
	return !bpf_ringbuf_output(&events, rec, size, BPF_RB_NO_WAKEUP);
}

/*
 * The stacks of the call just reserved (seq): user frames by frame pointers,
 * then Python's. The walk starts at the probed function itself (skipped);
 * at its entry the caller's return address is still at [sp], and kernels
 * before 6.16 or so miss it: it is put in front unless the walk has it. The
 * frames then start at words[0], else at words[1] with the header moved up
 * one word. Written before the entry is submitted, so it lands right after
 * it in the ring. true if written.
 */
static __always_inline bool emit_stack(struct pt_regs *ctx, __u64 id, __u32 seq, __u64 now,
				       bool whole)
{
	__u32 zero = 0, nr_native, nr_py, size, shift = 1, nr_key;
	struct stack_scratch *s;
	struct sp_stack_rec *rec;
	__u64 *seen;
	long bytes;

	s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s)
		return false;
	nr_key = stack_key_fill(ctx, s, (__u32)id);
	seen = nr_key ? bpf_map_lookup_elem(&stack_seen, &s->key) : NULL;
	if (seen && now - *seen < STACK_SAME_NS && !whole)
		return emit_same(s, nr_key, id, seq);
	bytes = bpf_get_stack(ctx, &s->words[1], SP_STACK_NATIVE * 8, BPF_F_USER_STACK | 1);
	nr_native = bytes > 0 ? (__u64)bytes / 8 : 0;
	if (!bpf_probe_read_user(&s->words[0], 8, (void *)ctx->sp) &&
	    (!nr_native || s->words[1] != s->words[0])) {
		shift = 0;
		nr_native++;
	}
	if (nr_native > SP_STACK_NATIVE)
		nr_native = SP_STACK_NATIVE;
	/* PYTHON FRAMES: filled here, innermost first (bpf/pystack.bpf.h) */
	nr_py = py_stack_read((struct sp_py_frame *)&s->words[PY_WORD], SP_STACK_PY);
	if (nr_py > SP_STACK_PY)
		nr_py = SP_STACK_PY;
	if (nr_py && shift + nr_native < PY_WORD)
		pack_py(s, shift + nr_native, nr_py);
	size = sizeof(*rec) + 8 * nr_native + 16 * nr_py;
	/* the bound check stays where the verifier needs it, on the register passed */
	barrier_var(size);
	if (size > sizeof(*s) - 8)
		return false;
	rec = (struct sp_stack_rec *)((char *)s + 8 * (shift & 1));
	stack_head(rec, size, id, seq, nr_native, nr_py, 0);
	if (bpf_ringbuf_output(&events, rec, size, BPF_RB_NO_WAKEUP))
		return false;
	if (nr_key)
		bpf_map_update_elem(&stack_seen, &s->key, &now, BPF_ANY);
	return true;
}

/* Is addr in the process's pinned set: the mappings at attach, or an allocation since? */
static __always_inline bool host_pinned(__u32 tgid, __u64 addr)
{
	struct sp_pinned_set *set = bpf_map_lookup_elem(&pinned, &tgid);

	if (!set)
		return false;
	for (int i = 0; i < SP_PINNED_RANGES; i++) {
		if (i >= set->nr)
			break;
		if (addr >= set->ranges[i].start && addr < set->ranges[i].end)
			return true;
	}
	for (int i = 0; i < SP_PINNED_ALLOCS; i++) {
		__u64 slot = set->allocs[i], first = slot >> SP_PIN_LEN_BITS;
		__u64 unit = addr >> SP_PIN_UNIT_SHIFT;

		if (slot && unit >= first && unit < first + (slot & ((1ULL << SP_PIN_LEN_BITS) - 1)))
			return true;
	}
	return false;
}

static const struct sp_pinned_set no_pinned;

/*
 * Memory the process pinned while traced, into the slot its address picks (a
 * slot taken before is given up: the copies there just keep their returns).
 */
static __always_inline void pin_range(__u32 tgid, __u64 start, __u64 bytes)
{
	__u64 first = (start + (1 << SP_PIN_UNIT_SHIFT) - 1) >> SP_PIN_UNIT_SHIFT;
	__u64 units = ((start + bytes) >> SP_PIN_UNIT_SHIFT) - first;
	struct sp_pinned_set *set;

	if ((__s64)units <= 0)
		return;
	if (units >= 1ULL << SP_PIN_LEN_BITS)
		units = (1ULL << SP_PIN_LEN_BITS) - 1;
	set = bpf_map_lookup_elem(&pinned, &tgid);
	if (!set) {
		bpf_map_update_elem(&pinned, &tgid, &no_pinned, BPF_NOEXIST);
		set = bpf_map_lookup_elem(&pinned, &tgid);
		if (!set)
			return;
	}
	set->allocs[(first * SP_PIN_SLOT_MUL) >> 60] = first << SP_PIN_LEN_BITS | units;
}

/* A frame for the call's return probe to pop; false if too deep. */
static __always_inline bool push_frame(struct thread_state *ts, __u32 depth, __u32 probe,
				       __u32 seq, __u64 sp, __u64 out_ptr, __u64 ret_addr,
				       __u64 pin_bytes)
{
	struct frame *f;

	if (depth >= SP_MAX_DEPTH) {
		count(SP_CNT_DEEP);
		return false;
	}
	f = FRAME(ts, depth);
	f->sp = sp;
	f->seq = seq;
	f->probe = probe;
	f->out_ptr = out_ptr;
	f->ret_addr = ret_addr;
	f->pin_bytes = pin_bytes;
	ts->depth = depth + 1;
	return true;
}

/* When a handle's launch last took its stack (SP_PICK_BY_HANDLE). */
struct pick_key {
	__u64 handle;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct pick_key);
	__type(value, __u64);
} stack_picked SEC(".maps");

/* Does this call of a probe with a stack_pick take its stack (enum sp_stack_pick)? */
static __always_inline bool picked(const struct sp_probe_spec *spec, struct thread_state *ts,
				   __u32 tgid, __u64 handle, __u64 now)
{
	struct pick_key key = { .handle = handle, .tgid = tgid };
	__u64 *last;

	if (spec->stack_pick == SP_PICK_BURST_LEAD) {
		if (ts->after_launch || now - ts->lead_stack_ns < SP_PICK_LEAD_GAP_NS ||
		    bpf_get_prandom_u32() % SP_PICK_LEAD_ONE_IN)
			return false;
		ts->lead_stack_ns = now;
		return true;
	}
	if (spec->stack_pick != SP_PICK_BY_HANDLE)
		return false;
	last = bpf_map_lookup_elem(&stack_picked, &key);
	if (last && now - *last < SP_PICK_HANDLE_NS)
		return false;
	bpf_map_update_elem(&stack_picked, &key, &now, BPF_ANY);
	return true;
}

/* The entry of a probed call; true when its return probe has a frame to pop. */
static __always_inline bool entry_hit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, probe;
	__u64 args[SP_MAX_ARGS], ret_addr;
	struct sp_probe_spec *spec;
	struct thread_state *ts;
	struct sp_call_pkt *rec;
	bool framed = false, quiet, pins;
	__u32 depth;
	__u8 faults;

	if (!is_traced(tgid))
		return false;
	probe = bpf_get_attach_cookie(ctx);
	spec = bpf_map_lookup_elem(&specs, &probe);
	if (!spec)
		return false;
	ts = thread_get(id);
	if (!ts) {
		count(SP_CNT_NO_THREAD);
		return false;
	}
	unwind(ts, ctx->sp, true);
	depth = ts->depth;
	faults = read_args(ctx, spec, args, &ret_addr);
	rec = emit_call(spec, probe, id, args, faults);
	if (!rec) {
		count(SP_CNT_DROP_CALL);
		return false;
	}
	if ((spec->flags & SP_SPEC_WINDOWED) &&
	    (rec->ts < window_from_ns || rec->ts > window_to_ns)) {
		bpf_ringbuf_discard(rec, 0);
		return false;
	}
	rec->seq = ++ts->next_seq;
	rec->depth = depth;
	rec->parent_seq = 0;
	if (depth > 0 && depth <= SP_MAX_DEPTH)
		rec->parent_seq = FRAME(ts, depth - 1)->seq;
	/* freed memory may come back pageable: all copies of the process return from now on */
	if (spec->flags & SP_SPEC_UNPINS)
		bpf_map_delete_elem(&pinned, &tgid);
	pins = spec->flags & SP_SPEC_PINS;
	quiet = quiet_pinned && !pins && spec->host_arg < SP_MAX_ARGS &&
		host_pinned(tgid, call_arg(args, spec->host_arg));
	/* a quiet copy has no return to pop a frame; a call that returns at once encloses nothing */
	if (quiet)
		rec->flags &= ~SP_PKT_HAS_RET;
	else if (spec->flags & SP_SPEC_ENCLOSES)
		framed = push_frame(ts, depth, probe, rec->seq, ctx->sp,
				    call_arg(args, spec->out_arg), ret_addr,
				    pins ? call_arg(args, spec->host_arg) : 0);
	if (!quiet && (spec->flags & SP_SPEC_STACK) && emit_stack(ctx, id, rec->seq, rec->ts, false))
		rec->flags |= SP_PKT_HAS_STACK;
	else if (spec->stack_pick && picked(spec, ts, tgid, call_arg(args, 0), rec->ts) &&
		 emit_stack(ctx, id, rec->seq, rec->ts, true))
		rec->flags |= SP_PKT_HAS_STACK;
	ts->after_launch = spec->stack_pick == SP_PICK_BURST_LEAD;
	bpf_ringbuf_submit(rec, submit_flags(rec->ts));
	return framed;
}

SEC("uprobe")
int BPF_KPROBE(on_entry)
{
	entry_hit(ctx);
	return 0;
}

static __always_inline void return_hit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, probe, seq = 0, depth = 0;
	struct sp_probe_spec *spec;
	struct thread_state *ts;
	struct sp_ret_rec *rec;
	__u64 entry_sp = ctx->sp - sizeof(__u64), out_ptr = 0, pin_bytes = 0;

	if (!is_traced(tgid))
		return;
	probe = bpf_get_attach_cookie(ctx);
	spec = bpf_map_lookup_elem(&specs, &probe);
	if (!spec)
		return;
	ts = bpf_map_lookup_elem(&threads, &tid);
	if (ts) {
		/* frames deeper than ours lost their returns (longjmp, exceptions) */
		unwind(ts, entry_sp - 1, false);
		depth = ts->depth;
		if (depth > 0 && depth <= SP_MAX_DEPTH) {
			struct frame *f = FRAME(ts, depth - 1);

			if (f->sp == entry_sp && f->probe == probe) {
				seq = f->seq;
				out_ptr = f->out_ptr;
				pin_bytes = f->pin_bytes;
				ts->depth = --depth;
			}
		}
	}
	if (!seq)
		count(SP_CNT_ORPHAN_RET);
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(SP_CNT_DROP_RET);
		return;
	}
	rec->type = SP_REC_RET;
	rec->size = sizeof(*rec);
	rec->probe = probe;
	rec->ts = bpf_ktime_get_ns();
	rec->tgid = tgid;
	rec->tid = tid;
	rec->seq = seq;
	rec->depth = depth;
	rec->pad = 0;
	rec->faults = 0;
	rec->result = ctx->ax;
	rec->out = 0;
	if (out_ptr && bpf_probe_read_user(&rec->out, sizeof(rec->out), (void *)out_ptr)) {
		rec->faults |= 1 << SP_FAULT_OUT;
		count(SP_CNT_FAULT_BASE + SP_FAULT_OUT);
	}
	if (quiet_pinned && (spec->flags & SP_SPEC_PINS) && !rec->result && rec->out && pin_bytes)
		pin_range(tgid, rec->out, pin_bytes);
	bpf_ringbuf_submit(rec, submit_flags(rec->ts));
}

SEC("uretprobe")
int BPF_KRETPROBE(on_return)
{
	return_hit(ctx);
	return 0;
}

extern bool bpf_session_is_return(void) __ksym __weak;

/*
 * Entry and return of the calls that have a return probe, on kernels with
 * uprobe sessions (6.13+): 1 from the entry leaves the return trap out, for
 * calls whose return nobody reads (not traced, lost, or only work).
 */
SEC("uprobe")
int BPF_KPROBE(on_session)
{
	if (bpf_session_is_return()) {
		return_hit(ctx);
		return 0;
	}
	return entry_hit(ctx) ? 0 : 1;
}

/*
 * Per traced process: link_map entries already looked at by on_dl_state, or
 * SP_DL_BASELINE (set from user space before it loads a library of its own into
 * the process): that load is only counted, and stops nothing.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);		/* tgid */
	__type(value, __u32);
} dl_seen SEC(".maps");

/*
 * Per traced process: when the programs last stopped it (ktime ns). The
 * watchdog continues a stop that user space has not continued in time, or
 * that a dead tracer never will; user space notes each it continued in
 * stops_done (written only from user space, so no write of ours is lost).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_STOP_PROCS);
	__type(key, __u32);		/* tgid */
	__type(value, __u64);
} stops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_STOP_PROCS);
	__type(key, __u32);		/* tgid */
	__type(value, __u64);		/* the stops value it continued */
} stops_done SEC(".maps");

/*
 * Stop the process, noted first: a stop nobody could find might last for
 * ever, so none is made where the note cannot be (the map is full).
 */
static __always_inline void stop_process(__u32 tgid, __u64 ts)
{
	if (bpf_map_update_elem(&stops, &tgid, &ts, BPF_ANY))
		return;
	bpf_send_signal(19 /* SIGSTOP */);
}

/* Forget exiting threads; tell the reader when a traced process is gone. */
/* tp_btf needs no tracefs mount */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct sp_exit_status_rec *status;
	struct sp_exit_rec *rec;

	if (!is_traced(tgid))
		return 0;
	bpf_map_delete_elem(&threads, &tid);
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&pinned, &tgid);
	/* nothing of a dead process stays: churn would fill the maps */
	bpf_map_delete_elem(&dl_seen, &tgid);
	/* the pid may be reused by a process nobody asked to trace */
	set_traced(tgid, false);
	bpf_map_delete_elem(&stops, &tgid);
	bpf_map_delete_elem(&stops_done, &tgid);
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(SP_CNT_DROP_CALL);
		return 0;
	}
	rec->type = SP_REC_EXIT;
	rec->size = sizeof(*rec);
	rec->tgid = tgid;
	rec->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(rec, 0);
	status = bpf_ringbuf_reserve(&events, sizeof(*status), 0);
	if (!status) {
		count(SP_CNT_DROP_CALL);
		return 0;
	}
	status->type = SP_REC_EXIT_STATUS;
	status->size = sizeof(*status);
	status->tgid = tgid;
	status->ts = bpf_ktime_get_ns();
	/* the last thread's code: a fatal signal's number, or exit's code << 8 */
	status->status = BPF_CORE_READ(task, exit_code);
	status->pad = 0;
	bpf_ringbuf_submit(status, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* Children of traced processes are traced from their first instruction. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid), child_tgid = BPF_CORE_READ(child, tgid);
	struct sp_fork_rec *rec;

	/* a new thread shares its parent's tgid: only new processes matter */
	if (child_tgid == parent_tgid || !is_traced(parent_tgid))
		return 0;
	set_traced(child_tgid, true);
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(SP_CNT_DROP_CALL);
		return 0;
	}
	rec->type = SP_REC_FORK;
	rec->size = sizeof(*rec);
	rec->tgid = child_tgid;
	rec->parent = parent_tgid;
	rec->pad = 0;
	rec->ts = bpf_ktime_get_ns();
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
	return 0;
}

#define DL_MAX_OBJECTS	4096	/* link_map entries walked at most */
#define DL_NEW_MAX	64	/* new entries whose names are looked at, per load */
#define DL_NAME		256
#define RT_CONSISTENT	0	/* r_debug.r_state once a (un)load is complete */

struct dl_walk {
	__u64 node;		/* struct link_map * in the process */
	__u32 index;
	__u32 seen;		/* entries before this one were looked at last time */
	__u32 nr_new;		/* entries not looked at yet */
	__u32 base;		/* offset of the basename in name */
	__u64 new_names[DL_NEW_MAX];	/* l_name of the last DL_NEW_MAX of them, a ring */
	char name[DL_NAME + 16];	/* slack: a masked offset may read 10 bytes past */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dl_walk);
} dl_scratch SEC(".maps");

/* bpf_loop takes a stack pointer: it carries the per-CPU walk state. */
struct dl_loop_ctx {
	struct dl_walk *w;
};

/* struct link_map (link.h): l_addr, l_name, l_ld, l_next, l_prev. */
static long dl_step(__u32 i, void *ctx)
{
	struct dl_walk *w = ((struct dl_loop_ctx *)ctx)->w;
	__u64 next = 0;

	if (!w || !w->node)
		return 1;
	/* a load appends its objects: the newest are the last entries */
	if (w->index >= w->seen &&
	    !bpf_probe_read_user(&w->new_names[w->nr_new & (DL_NEW_MAX - 1)], 8,
				 (void *)(w->node + 8)))
		w->nr_new++;
	if (bpf_probe_read_user(&next, 8, (void *)(w->node + 24)))
		next = 0;
	w->node = next;
	w->index++;
	return 0;
}

static long dl_find_base(__u32 i, void *ctx)
{
	struct dl_walk *w = ((struct dl_loop_ctx *)ctx)->w;

	if (!w)
		return 1;
	if (w->name[i & (DL_NAME - 1)] == '/')
		w->base = i + 1;
	return 0;
}

/* Is the basename of this path libcuda.so* or libnccl.so*? Compared as words. */
static __always_inline bool dl_cuda_name(struct dl_walk *w, struct dl_loop_ctx *loop_ctx, int len)
{
	__u64 word, cuda, nccl;
	__u16 so, want_so;
	const char *at;

	w->base = 0;
	bpf_loop(len & (DL_NAME - 1), dl_find_base, loop_ctx, 0);
	at = &w->name[w->base & (DL_NAME - 1)];
	__builtin_memcpy(&word, at, 8);
	__builtin_memcpy(&so, at + 8, 2);
	__builtin_memcpy(&cuda, "libcuda.", 8);
	__builtin_memcpy(&nccl, "libnccl.", 8);
	__builtin_memcpy(&want_so, "so", 2);
	return (word == cuda || word == nccl) && so == want_so;
}

/*
 * The dynamic loader calls _dl_debug_state (the debuggers' hook) once new
 * objects are mapped and before they are relocated or initialised. If one is
 * a CUDA or NCCL library, stop the process so user space attaches before the
 * library runs an instruction. The cookie is &_r_debug - &_dl_debug_state.
 */
SEC("uprobe")
int BPF_KPROBE(on_dl_state)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0, *seen;
	__u64 r_debug = PT_REGS_IP(ctx) + bpf_get_attach_cookie(ctx);
	struct dl_loop_ctx loop_ctx;
	struct sp_libmap_rec *rec;
	bool found = false, baseline;
	struct dl_walk *w;
	int state = -1;

	if (!is_traced(tgid))
		return 0;
	/* r_debug: int r_version, struct link_map *r_map, r_brk, enum r_state */
	if (bpf_probe_read_user(&state, 4, (void *)(r_debug + 24)) || state != RT_CONSISTENT)
		return 0;
	w = bpf_map_lookup_elem(&dl_scratch, &zero);
	if (!w)
		return 0;
	w->index = 0;
	w->nr_new = 0;
	seen = bpf_map_lookup_elem(&dl_seen, &tgid);
	baseline = seen && *seen == SP_DL_BASELINE;
	w->seen = seen && !baseline ? *seen : 0;
	if (bpf_probe_read_user(&w->node, 8, (void *)(r_debug + 8)))
		return 0;
	loop_ctx.w = w;
	bpf_loop(DL_MAX_OBJECTS, dl_step, &loop_ctx, 0);
	/* fewer objects than before: something was unloaded, look at all next time */
	w->seen = w->index < w->seen ? 0 : w->index;
	bpf_map_update_elem(&dl_seen, &tgid, &w->seen, BPF_ANY);
	/*
	 * With no count before it every entry looks new, the libraries mapped
	 * long ago too: this load only sets the count (user space reads the
	 * process's mappings again after its own load).
	 */
	if (baseline)
		return 0;
	for (int k = 0; k < DL_NEW_MAX && !found; k++) {
		int len;

		if (k >= w->nr_new)
			break;
		len = bpf_probe_read_user_str(w->name, DL_NAME, (void *)w->new_names[k]);
		found = len > 10 && dl_cuda_name(w, &loop_ctx, len);
	}
	/*
	 * More new objects than were looked at, or a list longer than the walk:
	 * stop anyway and let user space read the mappings, rather than miss one.
	 */
	if (!found && (w->node || w->nr_new > DL_NEW_MAX)) {
		found = true;
		w->name[0] = '\0';
	}
	if (!found)
		return 0;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		/* nobody would know to continue a stopped process: let it run */
		count(SP_CNT_LIBMAP_LOST);
		return 0;
	}
	rec->type = SP_REC_LIBMAP;
	rec->size = sizeof(*rec);
	rec->tgid = tgid;
	rec->tid = (__u32)bpf_get_current_pid_tgid();
	rec->pad = 0;
	rec->ts = bpf_ktime_get_ns();
	bpf_probe_read_kernel_str(rec->name, sizeof(rec->name), w->name);
	/* SIGSTOP takes effect on the way back to user space, still inside the loader */
	stop_process(tgid, rec->ts);
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * A traced process ran execve: stop it before its loader runs, so user space
 * can hook the loader of the new image (a container may bring its own).
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sp_exec_rec *rec;

	if (!is_traced(tgid))
		return 0;
	bpf_map_delete_elem(&dl_seen, &tgid);
	/* the new image has none of the old memory */
	bpf_map_delete_elem(&pinned, &tgid);
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(SP_CNT_LIBMAP_LOST);
		return 0;
	}
	rec->type = SP_REC_EXEC;
	rec->size = sizeof(*rec);
	rec->tgid = tgid;
	rec->ts = bpf_ktime_get_ns();
	stop_process(tgid, rec->ts);
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
	return 0;
}
