/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Records and per-probe specs shared by the BPF side and user space. */
#ifndef __SPECPROBE_H
#define __SPECPROBE_H

#define SP_MAX_ARGS	 9	/* six registers, then up to three stack words */
#define SP_REG_ARGS	 6
#define SP_STACK_ARGS	 3
#define SP_DATA_SMALL	 64	/* e.g. a CUlaunchConfig */
#define SP_DATA_LARGE	 128	/* e.g. a kernel or module name */
#define SP_MAX_DEPTH	 8	/* frames kept per thread */
#define SP_NO_ARG	 0xff
#define SP_PID_LIMIT	 (1 << 22)	/* PID_MAX_LIMIT on 64-bit kernels */
#define SP_STOP_PROCS	 4096	/* traced processes a stop can be noted for at once */
#define SP_DL_BASELINE	 0xffffffffu	/* dl_seen: the next load is walked, never stopped blind */

enum sp_rec_type {
	SP_REC_CALL = 1,	/* entry of any probed call */
	SP_REC_RET = 2,		/* completion of an entry + completion kind */
	SP_REC_FORK = 3,	/* a traced process forked: the child is traced too */
	SP_REC_LIBMAP = 4,	/* a traced process loaded a CUDA/NCCL library: it is stopped */
	SP_REC_EXEC = 5,	/* a traced process called execve: it is stopped */
	SP_REC_CALL_PACKED = 6,	/* ring only: an entry as BPF writes it, widened to SP_REC_CALL */
	/* written by user space into recordings only */
	SP_REC_STATS = 16,	/* drop and fault counters so far */
	SP_REC_END = 17,	/* the recording ended cleanly */
	/* written by BPF again */
	SP_REC_EXIT = 18,	/* a traced process exited */
	/* written by user space: a library attached after the header was written */
	SP_REC_LIB = 19,	/* the library (index = next library number) */
	SP_REC_PROBE = 20,	/* one of its probes (cookie = next probe number) */
	SP_REC_MAP = 21,	/* where a traced process maps it */
	SP_REC_PROC = 22,	/* a traced process's pid in its own pid namespace */
	SP_REC_CALIB = 23,	/* cost of one probe hit, measured on this host at the start */
	SP_REC_CPU = 24,	/* CPU time a traced process has used so far */
	SP_REC_HOSTMEM = 25,	/* a writable mapping a traced process had when first described */
	/* call sites */
	SP_REC_STACK = 26,	/* BPF: native and Python frames of the call just before it */
	SP_REC_PYCODE = 27,	/* specprobe: a Python code object a stack names */
	SP_REC_OBJMAP = 28,	/* specprobe: an executable mapping a native stack names */
	/* bounded recordings and merges */
	SP_REC_SEGMENT = 29,	/* specprobe: a segment of a ring starts; what came before it */
	SP_REC_WINDOW = 30,	/* specprobe: a dump of the ring was made around this event */
	SP_REC_CLOCK = 31,	/* specprobe: a clock snapshot; in a merge, how a source moved */
	/* optional kinds (64..127): a reader that does not know one skips it */
	SP_REC_RANK = 64,	/* specprobe: a traced process's rank, from what the process shows */
	/* the GPU timeline (--gpu): written by the activity agent in the target */
	SP_REC_GPU = 65,	/* one execution on the GPU: a graph, kernel, copy or memset */
	SP_REC_GPU_NAME = 66,	/* a kernel name that later SP_REC_GPU records name by number */
	SP_REC_GPU_STATE = 67,	/* a process's agent: on or off and why, its counters so far */
	/* --server-metrics: written by specprobe from the server's own Prometheus endpoint */
	SP_REC_SRVMETRIC = 68,	/* one known family's value at one scrape, or a failed scrape */
	/* a thread's wait for a CPU so far: how late its first record came for want of one */
	SP_REC_RUNQ = 69,
	/* how a traced process ended: a death by a signal tells why its records stop */
	SP_REC_EXIT_STATUS = 70,
	/* a merge: when the input that holds a process attached to it (its own attach mark) */
	SP_REC_ATTACH = 71,
	/* --sample: the launch probes went in (a window opens) or came out (it closes) */
	SP_REC_SAMPLE = 72,
};

#define SP_MAX_PROBES	4096	/* size of the spec map: probes of all libraries, late ones too */
#define SP_CALIB_PROBE	(SP_MAX_PROBES - 1)	/* cookie of the self-calibration probe */
#define SP_LIB_NAME	64	/* path bytes kept in a library-map record */

/* How the BPF handler treats a probe (struct sp_probe_spec.flags). */
enum sp_spec_flags {
	SP_SPEC_COMPLETION = 1 << 0,	/* has a return probe */
	SP_SPEC_WINDOWED = 1 << 1,	/* --sample: recorded only in [window_from_ns, window_to_ns] */
	SP_SPEC_DATA_STR = 1 << 2,	/* data is a NUL-terminated string */
	SP_SPEC_ENCLOSES = 1 << 3,	/* may call probed entry points: keep a frame */
	SP_SPEC_DIMS = 1 << 4,		/* arguments 1..7 are 32-bit (a launch's grid, block, shmem) */
	SP_SPEC_STACK = 1 << 5,		/* an SP_REC_STACK follows the entry record */
	SP_SPEC_UNPINS = 1 << 6,	/* frees or unregisters host memory: drop the pinned set */
	SP_SPEC_PINS = 1 << 7,		/* returns pinned memory (*out, host_arg bytes): add it */
};
#define SP_HAS_STACKS	1	/* this header knows SP_SPEC_STACK (benchmarks build old ones) */
#define SP_HAS_SESSIONS	1	/* ... and the session program on_session */

/* Fields whose user-memory read failed (record .faults bits and fault counters). */
enum sp_fault_field {
	SP_FAULT_STACK = 0,	/* stack words (arguments 7..9) */
	SP_FAULT_DATA = 1,	/* dereferenced argument at entry */
	SP_FAULT_OUT = 2,	/* output pointer at return */
	SP_FAULT_NR,
};

/* Per-CPU counters (map "counters"). */
enum sp_counter {
	SP_CNT_DROP_CALL = 0,	/* ring buffer full at an entry */
	SP_CNT_DROP_RET = 1,	/* ring buffer full at a return */
	SP_CNT_NO_THREAD = 2,	/* per-thread state could not be created */
	SP_CNT_DEEP = 3,	/* nesting deeper than SP_MAX_DEPTH: not pushed */
	SP_CNT_ORPHAN_RET = 4,	/* return whose entry frame was not found */
	SP_CNT_HITS = 5,	/* not counted: a per-CPU write on every hit; 0 in recordings */
	SP_CNT_LIBMAP_LOST = 6,	/* library mapping seen but not reported: ring full */
	SP_CNT_WATCHDOG = 7,	/* stops continued by the watchdog, not the tracer (user space) */
	SP_CNT_FAULT_BASE = 8,	/* + enum sp_fault_field */
	SP_CNT_NR = SP_CNT_FAULT_BASE + SP_FAULT_NR,
};

/* What the handler reads for one probe, indexed by the probe's cookie. */
struct sp_probe_spec {
	__u8 flags;		/* enum sp_spec_flags */
	__u8 stack_args;	/* stack words to read: 0..SP_STACK_ARGS */
	__u8 data_arg;		/* argument whose pointee is copied at entry, or SP_NO_ARG */
	__u8 data_len;		/* 0, SP_DATA_SMALL or SP_DATA_LARGE */
	__u8 out_arg;		/* argument holding an output pointer read at return, or SP_NO_ARG */
	__u8 nr_args;		/* arguments the catalogue names: 0..SP_MAX_ARGS */
	__u8 host_arg;		/* an async copy's host pointer (SP_SPEC_PINS: the bytes), or SP_NO_ARG */
	__u8 stack_pick;	/* enum sp_stack_pick: some calls' stacks without SP_SPEC_STACK */
};

/*
 * Stacks taken at some calls of a probe, to tell where the program launches
 * what, at a cost far below a stack at every launch. Always whole (never
 * SP_STACK_SAME): launches from different places share their innermost frames.
 */
enum sp_stack_pick {
	SP_PICK_NONE = 0,
	SP_PICK_BY_HANDLE = 1,	/* once a second per process and argument 0 (a graph) */
	SP_PICK_BURST_LEAD = 2,	/* a kernel launch after a call that was not one, one in
				 * SP_PICK_LEAD_ONE_IN at random, SP_PICK_LEAD_GAP_NS
				 * apart at least on its thread; marks the probe a launch */
};
#define SP_PICK_LEAD_ONE_IN	8
#define SP_PICK_LEAD_GAP_NS	20000000ULL
#define SP_PICK_HANDLE_NS	1000000000ULL

struct sp_rec_hdr {
	__u16 type;		/* enum sp_rec_type */
	__u16 size;		/* bytes, header included */
};

/* Flags of struct sp_call_rec. */
enum sp_call_flags {
	SP_CALL_HAS_RET = 1 << 0,	/* a completion record will follow */
	SP_CALL_HAS_STACK = 1 << 1,	/* an SP_REC_STACK of this call follows it */
};

struct sp_call_rec {
	__u16 type;
	__u16 size;		/* sizeof(struct sp_call_rec) + data bytes */
	__u32 probe;		/* cookie: index in the session's probe list */
	__u64 ts;		/* CLOCK_MONOTONIC ns */
	__u32 tgid;
	__u32 tid;
	__u32 seq;		/* per-thread call number, from 1 */
	__u32 parent_seq;	/* enclosing probed call on this thread, 0 if none */
	__u8 depth;		/* enclosing probed calls still on this thread's stack */
	__u8 flags;		/* enum sp_call_flags */
	__u16 faults;		/* bits of enum sp_fault_field */
	__u32 pad;
	__u64 args[SP_MAX_ARGS];
	/* followed by data[size - sizeof(struct sp_call_rec)] */
};

/* Bits of struct sp_call_pkt.flags. */
enum sp_pkt_flags {
	SP_PKT_HAS_RET = 1 << 0,	/* SP_CALL_HAS_RET */
	SP_PKT_DIMS = 1 << 1,		/* words 1..4 hold arguments 1..7 as __u32, word 5 argument 8 */
	SP_PKT_DATA_SMALL = 1 << 2,	/* SP_DATA_SMALL bytes of data after the words */
	SP_PKT_DATA_LARGE = 1 << 3,	/* SP_DATA_LARGE bytes of data after the words */
	SP_PKT_FAULT_SHIFT = 4,		/* bits of enum sp_fault_field from here (three) */
	SP_PKT_HAS_STACK = 1 << 7,	/* SP_CALL_HAS_STACK */
};

/*
 * An entry as it crosses the ring: only the words its arguments need, so the
 * probe writes fewer cache lines (each new line of the ring costs a miss). The
 * reader widens it to struct sp_call_rec; recordings hold only that.
 */
struct sp_call_pkt {
	__u16 type;		/* SP_REC_CALL_PACKED */
	__u16 size;		/* header, words and data */
	__u16 probe;		/* < SP_MAX_PROBES */
	__u8 depth;
	__u8 flags;		/* enum sp_pkt_flags */
	__u64 ts;
	__u32 tgid;
	__u32 tid;
	__u32 seq;
	__u32 parent_seq;
	/* followed by __u64 argument words, then the data the flags name */
};

struct sp_ret_rec {
	__u16 type;
	__u16 size;
	__u32 probe;
	__u64 ts;
	__u32 tgid;
	__u32 tid;
	__u32 seq;		/* seq of the entry this completes; 0 if it was not found */
	__u16 faults;
	__u8 depth;
	__u8 pad;
	__u64 result;		/* return register */
	__u64 out;		/* *output pointer, when the spec names one */
};

/* User-space records in recordings. */
struct sp_stats_rec {
	__u16 type;
	__u16 size;
	__u32 pad;
	__u64 ts;
	__u64 counters[SP_CNT_NR];	/* totals over all CPUs since the start */
};

struct sp_exit_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;
};

/* Right after SP_REC_EXIT: the status as wait() would give it (signal, or code << 8). */
struct sp_exit_status_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;
	__u32 status;
	__u32 pad;
};

struct sp_fork_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;		/* the new process */
	__u64 ts;
	__u32 parent;		/* its parent's tgid */
	__u32 pad;
};

/*
 * A traced process's loader mapped a CUDA or NCCL library (seen at
 * _dl_debug_state). The process was sent SIGSTOP before the library could
 * run: user space reads the mappings, attaches, then sends SIGCONT.
 */
struct sp_libmap_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;
	__u32 tid;
	__u32 pad;
	char name[SP_LIB_NAME];	/* path of the first such object, maybe cut */
};

/* A traced process exec'd and was sent SIGSTOP: its new loader gets hooked first. */
struct sp_exec_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;
};

/* Late library: fixed part, then the path (NUL-terminated) up to size. */
struct sp_lib_rec {
	__u16 type;
	__u16 size;
	__u32 index;		/* library number, continuing the header's table */
	__u64 ts;
	__u64 dev;		/* as stat() gives it */
	__u64 ino;
	__u32 kind;		/* enum sp_lib */
	__u32 tgid;		/* the process whose mapping brought it */
	char build_id[41];
	char pad[7];
	/* followed by the path */
};

/* Late probe: fixed part, then the symbol (NUL-terminated) up to size. */
struct sp_probe_rec {
	__u16 type;
	__u16 size;
	__u32 cookie;		/* probe number, continuing the header's table */
	__u32 lib;
	__u32 catalog;
	__u64 offset;
	__u64 vaddr;
	/* followed by the symbol */
};

/* A mapping of a probed library in a traced process, after the header. */
struct sp_map_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u32 lib;
	__u32 pad;
	__u64 start;
	__u64 end;
	__u64 pgoff;
};

/* A traced process in another pid namespace (a container): the pid it sees. */
struct sp_proc_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;		/* as the host sees it (every record uses these) */
	__u64 ts;
	__u32 ns_pid;		/* innermost NSpid */
	__u32 pad;
};

/* Host time one probe hit adds, measured at the start on a function of specprobe itself. */
struct sp_calib_rec {
	__u16 type;
	__u16 size;
	__u32 calls;		/* calls timed per way */
	__u64 ts;
	__u64 entry_ps;		/* an entry probe hit (entry-only kinds), picoseconds */
	__u64 return_ps;	/* what a return probe adds on top, picoseconds */
	__u64 stack_ps;		/* what a repeated site's native stack adds; absent before */
};
/* the record's size in recordings made before stack_ps */
#define SP_CALIB_REC_V1	__builtin_offsetof(struct sp_calib_rec, stack_ps)

/* utime + stime of a traced process, sampled with each stats record. */
struct sp_cpu_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;
	__u64 cpu_ns;
};

/* Where an SP_REC_RUNQ's figure was read. */
enum sp_runq_when {
	SP_RUNQ_MARK = 1,	/* by specprobe, /proc/PID/task/TID/schedstat, before the attach mark */
	SP_RUNQ_FIRST_HIT = 2,	/* by BPF at the thread's first probe hit */
};

/* A thread's run-queue wait so far (the scheduler's sched_info.run_delay). */
struct sp_runq_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;
	__u32 tid;
	__u32 when;		/* enum sp_runq_when */
	__u64 run_delay_ns;
};

/* What a mapping in /proc/PID/maps says of host memory a copy may use. */
enum sp_hostmem_kind {
	SP_HOSTMEM_DRIVER = 1,		/* shared /dev/zero or /dev/nvidia*: the driver's pinned memory */
	SP_HOSTMEM_PRIVATE = 2,		/* any other writable mapping: pinned only if registered */
};

/*
 * Pinned host memory of a process (map "pinned"): the driver's mappings it had
 * when it was attached to while running, and what cuMemHostAlloc/cuMemAllocHost
 * gave it since. An async copy into or out of it is only work, whatever it takes
 * to return (docs/host-memory.md), so its return probe and stack are left out:
 * the entry is all that is recorded. Dropped when the process frees host memory.
 */
#define SP_PINNED_RANGES 32	/* the mappings, written by user space */
#define SP_PINNED_ALLOCS 16	/* the allocations, written by the return probes */
#define SP_PIN_UNIT_SHIFT 6	/* allocations are kept in 64-byte units, rounded inwards */
#define SP_PIN_LEN_BITS	23	/* ... and at most 2^23 - 1 units long */
#define SP_PIN_SLOT_MUL	0x9e3779b97f4a7c15ULL	/* slot: (start unit * this) >> 60 */

struct sp_pinned_set {
	__u32 nr;
	__u32 pad;
	struct {
		__u64 start, end;
	} ranges[SP_PINNED_RANGES];
	/*
	 * start unit << SP_PIN_LEN_BITS | length in units, 0 if free: one store
	 * writes a slot, so a reader on another CPU never sees half of one.
	 */
	__u64 allocs[SP_PINNED_ALLOCS];
};

struct sp_hostmem_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;		/* when the mapping was read */
	__u64 start, end;
	__u32 kind;		/* enum sp_hostmem_kind */
	__u32 pad;
};

/* Where an SP_REC_RANK's rank was read, most trusted first. */
enum sp_rank_from {
	SP_RANK_NCCL_COMM = 1,	/* the communicator's own fields */
	SP_RANK_ENVIRON = 2,	/* RANK / LOCAL_RANK in /proc/PID/environ */
	SP_RANK_TITLE = 3,	/* the process title (cmdline or comm): sglang::scheduler_TP1 */
	SP_RANK_DEVICE = 4,	/* the one /dev/nvidiaN it has open: the GPU number */
};

#define SP_RANK_WHAT	48	/* bytes of what told the rank, NUL-terminated */

/* A process's rank as read at attach; a later one of a more trusted source replaces it. */
struct sp_rank_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;		/* when it was read */
	__s32 rank;
	__s32 nranks;		/* -1: not shown */
	__u32 from;		/* enum sp_rank_from */
	__u32 pad;
	char what[SP_RANK_WHAT];	/* "RANK=1 WORLD_SIZE=2", the title, "/dev/nvidia1" */
};

#define SP_STACK_NATIVE	32	/* user frames kept per stack */
#define SP_STACK_PY	32	/* Python frames kept per stack */

/* One Python frame as BPF reads it; user space names it from an SP_REC_PYCODE. */
struct sp_py_frame {
	__u64 code;		/* the code object's address in the target */
	__u32 instr;		/* byte offset of the current instruction in the code's bytecode */
	__u32 depth_mark;	/* innermost frame: its address's low bits (how deep it runs); else 0 */
};

/*
 * The stacks of the SP_REC_CALL (same tgid, tid, seq) that precedes it on its
 * thread: nr_native return addresses, innermost first, then nr_py frames.
 */
struct sp_stack_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u32 tid;
	__u32 seq;
	__u16 nr_native;
	__u16 nr_py;
	__u32 flags;		/* enum sp_stack_flags */
	/* followed by __u64 ips[nr_native], then struct sp_py_frame py[nr_py] */
};

/*
 * Flags of struct sp_stack_rec. A thread that calls from the same place again
 * within a second is not walked again: its record holds only the innermost
 * frames (the return address, up to SP_STACK_KEY_NATIVE - 1 more through the
 * frame pointers, up to SP_STACK_KEY_PY Python frames), and readers take the
 * frames of the thread's last whole stack that began with the same ones.
 */
enum sp_stack_flags {
	SP_STACK_SAME = 1 << 0,
};

#define SP_STACK_KEY_NATIVE	4	/* native frames a repeated call site is known by */
#define SP_STACK_KEY_PY		3	/* Python frames: a library helper's line, its callers' */

/* From instr (a bytecode byte offset) up to the next entry's, the code runs line. */
struct sp_pyline {
	__u32 instr;
	__s32 line;		/* -1: no line */
};

/*
 * A code object a stack of tgid named, read from the target before the first
 * stack record that names it: the file, the function, then the line table
 * (version-independent: readers need no CPython knowledge).
 */
struct sp_pycode_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 code;
	__s32 firstlineno;
	__u16 file_len;		/* bytes of the file name, NUL included */
	__u16 name_len;		/* bytes of the qualified function name, NUL included */
	__u32 nr_lines;
	__u32 pad;
	/* followed by file, name, padding to 8, then struct sp_pyline lines[nr_lines] */
};

/* An executable mapping of tgid that a native stack named: enough to symbolise later. */
struct sp_objmap_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 start;
	__u64 end;
	__u64 pgoff;
	char build_id[41];	/* hex, empty if the object has none */
	char pad[7];
	/* followed by the path (NUL-terminated) up to size */
};

/*
 * First record of a segment after its header and the state it repeats (late
 * tables, calibration, host memory): what the segments before it held. A
 * reader starting at this segment has lost exactly that.
 */
struct sp_segment_rec {
	__u16 type;
	__u16 size;
	__u32 index;		/* segment number, from 0 */
	__u64 ts;		/* CLOCK_MONOTONIC when the segment started */
	__u64 prior_calls;	/* SP_REC_CALL records in segments 0 .. index-1 */
	__u64 prior_records;	/* records of any type there */
	__u64 prior_bytes;	/* file bytes there, headers included */
	__u64 prior_first_ts;	/* first and last record times there; 0 when index is 0 */
	__u64 prior_last_ts;
	__u64 max_bytes;	/* the ring's budget (--max-size) */
};

enum sp_window_reason {
	SP_WINDOW_HUNG = 1,	/* a call stayed unreturned threshold_ns */
};

/* Written when a dump is triggered, into the ring: the dump holds the segments up to it. */
struct sp_window_rec {
	__u16 type;
	__u16 size;
	__u32 reason;		/* enum sp_window_reason */
	__u64 ts;		/* when the trigger fired */
	__u64 threshold_ns;
	__u64 after_ns;		/* records kept after ts before the dump was cut */
	__u32 tgid;		/* the call that triggered it */
	__u32 tid;
	__u32 seq;
	__u32 probe;
	__u64 entry_ts;
	__u32 dump;		/* dump number, from 1 */
	__u32 pad;
};

enum sp_clock_flags {
	SP_CLOCK_MERGED = 1 << 0,	/* a source of a merge: shift_ns and tgid_base applied */
};

/*
 * CLOCK_MONOTONIC read before and after CLOCK_REALTIME: the gap bounds how
 * far apart the pair is. A merge writes one per source.
 */
struct sp_clock_rec {
	__u16 type;
	__u16 size;
	__u32 source;		/* input number in a merge, 0 in a recording */
	__u64 ts;		/* mono_ns as this file's timestamps give it */
	__u64 mono_ns;		/* the source's own clock, midway between the two reads */
	__u64 realtime_ns;
	__u64 gap_ns;		/* between the two monotonic reads; 0: not measured */
	__s64 shift_ns;		/* added to the source's timestamps */
	__u32 tgid_base;	/* added to the source's tgids */
	__u32 flags;		/* enum sp_clock_flags */
	char host[65];
	char pad[7];
};

/*
 * In a merge, a process's attach marks as its own input had them (on the
 * merge's clock): the header's are only the earliest start and the latest
 * end of them all. Placed at the start, before any call of the process.
 */
struct sp_attach_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;		/* as the merge numbers it */
	__u64 ts;		/* attaching began (the input's attach_start_ns) */
	__u64 done_ns;		/* every probe attached from here on (attach_done_ns) */
	__u32 source;		/* input number in the merge */
	__u32 pad;
};

/*
 * --sample ON/EVERY: launch probes are in place ON of every EVERY; every
 * other probe all the time. A window is [open's ts, close's ts]: every launch
 * made in it was seen. The recording's end closes an open window.
 */
enum sp_sample_flags {
	SP_SAMPLE_OPEN = 1,	/* the window opens here; else it closes */
	/* after a close: its launch probes are out, cost_ns is how long that took */
	SP_SAMPLE_DETACHED = 2,
};

struct sp_sample_rec {
	__u16 type;
	__u16 size;
	__u32 flags;		/* enum sp_sample_flags */
	__u64 ts;		/* open: every launch probe in from here; close: up to here */
	__u64 cost_ns;		/* the attach (open) or detach (detached), tracer's wall time */
	__u32 on_ms;		/* the duty cycle asked for */
	__u32 every_ms;
	__u32 probes;		/* launch probes put in or taken out */
	/*
	 * µs the tracer set the edge late by (preempted): launches are all in only
	 * from ts + late_us (open) or up to ts - late_us (close); 0 in older files
	 */
	__u32 late_us;
};

/* What an SP_REC_GPU ran. */
enum sp_gpu_kind {
	SP_GPU_GRAPH = 1,	/* a graph launch, as one execution (CUPTI's graph-level trace) */
	SP_GPU_KERNEL = 2,	/* an eager kernel */
	SP_GPU_MEMCPY = 3,
	SP_GPU_MEMSET = 4,
};

/*
 * One execution, as CUPTI's activity records give it, times already on
 * CLOCK_MONOTONIC (the uprobes' clock). The launching call is not named:
 * readers match it by process, stream and order (docs/gpu-timeline.md).
 */
struct sp_gpu_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 start;		/* on the GPU, CLOCK_MONOTONIC ns */
	__u64 end;
	__u64 bytes;		/* memcpy, memset: bytes; else 0 */
	__u32 stream;		/* CUPTI's stream id (not the CUstream handle) */
	__u32 correlation;	/* CUPTI's correlation id */
	__u32 device;
	__u32 context;		/* CUPTI's context id */
	__u32 graph;		/* graph: CUPTI's graph id; else 0 */
	__u32 name;		/* kernel: its SP_REC_GPU_NAME number, 0: none */
	__u8 kind;		/* enum sp_gpu_kind */
	__u8 copy_kind;		/* memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP) */
	__u8 pad[6];
};

#define SP_GPU_NAME_MAX 256	/* bytes of a kernel name kept, NUL included */

/* A kernel name of tgid, numbered from 1 in the order the agent first met it. */
struct sp_gpu_name_rec {
	__u16 type;
	__u16 size;		/* sizeof + the name's bytes, NUL included, padded to 8 */
	__u32 tgid;
	__u32 number;
	__u32 pad;
	/* followed by the name */
};

enum sp_gpu_status {
	SP_GPU_ON = 1,		/* activity records flow */
	SP_GPU_NO_CUPTI = 2,	/* no libcupti found in the target's environment */
	SP_GPU_IN_USE = 3,	/* another CUPTI client (torch.profiler, Nsight) holds the process */
	SP_GPU_NO_GRAPH_TRACE = 4,	/* this CUPTI has no graph-level records */
	SP_GPU_FAILED = 5,	/* a CUPTI call failed: detail names it */
	SP_GPU_OFF = 6,		/* turned off: the tracer went away, or the process exits */
};

#define SP_GPU_DETAIL 96	/* bytes of an agent's detail, NUL-terminated */

/*
 * Written by a process's agent when its status changes and after each flush
 * (counters are totals so far): readers keep the last per tgid.
 */
struct sp_gpu_state_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;
	__u64 ts;		/* when written */
	__u64 flushed_ns;	/* executions that ended before it were handed over; 0: none yet */
	__u64 records;		/* SP_REC_GPU handed over so far */
	__u64 cupti_dropped;	/* records CUPTI lost (cuptiActivityGetNumDroppedRecords) */
	__u64 ring_dropped;	/* records the shared ring had no room for */
	__u64 overhead_ns;	/* CUPTI's own overhead records, summed */
	__u32 status;		/* enum sp_gpu_status */
	__u32 cupti_version;	/* cuptiGetVersion; 0: not loaded */
	char detail[SP_GPU_DETAIL];	/* the libcupti path, or what failed */
};

/* The server's families specprobe keeps (docs/server-metrics.md); others are ignored. */
enum sp_srv_family {
	SP_SRV_NONE = 0,		/* no value: a scrape that failed (status says why) */
	SP_SRV_DRAFTS = 1,		/* counter: drafts verified (vLLM: one per request and step) */
	SP_SRV_DRAFT_TOKENS = 2,	/* counter: draft tokens proposed */
	SP_SRV_ACCEPTED = 3,		/* counter: draft tokens accepted, bonus token not counted */
	SP_SRV_GENERATED = 4,		/* counter: tokens generated */
	SP_SRV_ACCEPT_LENGTH = 5,	/* gauge: mean accept length, bonus token counted */
	SP_SRV_ACCEPT_RATE = 6,		/* gauge: accepted / draft tokens */
	SP_SRV_FAMILY_NR,
};

enum sp_srv_server {
	SP_SRV_UNKNOWN = 0,
	SP_SRV_VLLM = 1,		/* vllm: prefix */
	SP_SRV_SGLANG = 2,		/* sglang: prefix */
};

enum sp_srv_status {
	SP_SRV_OK = 0,
	SP_SRV_DOWN = 1,		/* no connection */
	SP_SRV_SLOW = 2,		/* no whole answer within the timeout */
	SP_SRV_NOT_TEXT = 3,		/* an answer that is not the text format (HTML) */
	SP_SRV_TOO_BIG = 4,		/* a body over the size cap */
	SP_SRV_HTTP = 5,		/* an HTTP status other than 200 (value holds it) */
	SP_SRV_NO_FAMILY = 6,		/* text format, but none of the known families */
	SP_SRV_CLOSED = 7,		/* the connection closed (or reset) before a whole answer */
	SP_SRV_BAD_LENGTH = 8,		/* a Content-Length that is no byte count, or not the body's */
	SP_SRV_BAD_SAMPLE = 9,		/* a known family's line that is not name{labels} value [ts] */
	SP_SRV_BAD_VALUE = 10,		/* a value its family cannot hold (a counter below 0, NaN...) */
	SP_SRV_STATUS_NR,
};

/*
 * One scrape of --server-metrics: a record per known family found (value
 * summed over its label sets; gauges averaged), or one with family
 * SP_SRV_NONE and the status of a scrape that failed.
 */
struct sp_srvmetric_rec {
	__u16 type;
	__u16 size;
	__u32 tgid;		/* the traced process taken for the server; 0: not known */
	__u64 ts;		/* CLOCK_MONOTONIC ns when the answer was whole */
	double value;
	__u32 scrape;		/* numbered from 1: the records of one scrape share it */
	__s32 rank;		/* -1: the whole server */
	__u16 family;		/* enum sp_srv_family */
	__u8 server;		/* enum sp_srv_server */
	__u8 status;		/* enum sp_srv_status */
	__u32 series;		/* label sets summed into value */
};

#endif /* __SPECPROBE_H */
