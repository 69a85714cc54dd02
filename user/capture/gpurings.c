// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The rings are written by the target, so everything read from them is
 * checked: a ring file must be a plain file of the right size owned by the
 * command's user with one link (never a link to elsewhere), and each record
 * must have its kind's exact size. A ring is unlinked once mapped, so the
 * folder holds only the agent and rings not yet seen.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "gpu_agent.h"
#include "gpurings.h"
#include "gpushm.h"
#include "inject.h"
#include "launch.h"
#include "log.h"
#include "safepath.h"
#include "specprobe.h"

#define DIR_TEMPLATE "/dev/shm/specprobe-gpu.XXXXXX"
#define DIR_PREFIX "specprobe-gpu."
/* held by the folder's tracer while it lives: a later one clears the folder of a dead one */
#define LOCK_FILE "lock"

struct gpu_ring {
	struct gpushm_header *h;
	const void *data;
	__u32 pid;
	bool broken;		/* a record made no sense: not read further */
	bool injected;		/* -p: its agent lets it go when told (detach) */
	bool told[SP_GPU_OFF + 1];	/* statuses already said */
	struct sp_gpu_state_rec last;	/* its newest state; status 0: none yet */
};

struct gpu_rings {
	char dir[sizeof(DIR_TEMPLATE)];	/* -- CMD only: -p brings the agent in by memfd */
	int dir_fd;		/* the folder, held open from its making: all is done in it */
	int lock_fd;
	uid_t owner;		/* of the ring files: the command's user */
	char env_inject[64 + sizeof(DIR_TEMPLATE)];
	char env_dir[32 + sizeof(DIR_TEMPLATE)];
	char *env_cupti;
	char *env[4];
	struct gpu_ring *rings;
	int nr_rings;
	const char *cupti;	/* --cupti, for the injected agents */
	bool running;		/* -p */
	struct inject_try *tries;	/* -p: each process asked */
	int nr_tries;
};

/* -p: where bringing the agent into a process stands. */
struct inject_try {
	__u32 pid;
	bool done;		/* in, or refused for good */
	int busy;		/* tries that found no thread at rest */
};

#define INJECT_BUSY_TRIES 10	/* a second apart: then it is said and left */

/*
 * For gpu_rings__remove_now: the folder and /dev/shm held open, no allocation
 * needed. The folder is given to -u's user, who may rename it and plant a link
 * at its name: it is never reached by its path again.
 */
static int live_dir_fd = -1, live_shm_fd = -1;
static char live_name[sizeof(DIR_TEMPLATE)];
static char live_agent[sizeof(DIR_TEMPLATE) + sizeof(GPUSHM_AGENT_FILE) + 1];

int gpu_rings__write_agent(int fd)
{
	const unsigned char *p = specprobe_gpu_agent;
	size_t left = specprobe_gpu_agent_size;
	int ret = 0;

	while (left && !ret) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		left -= n;
	}
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

static int write_agent(int dir_fd)
{
	int fd = openat(dir_fd, GPUSHM_AGENT_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC, 0500);

	return fd < 0 ? -errno : gpu_rings__write_agent(fd);
}

/* Folders of tracers that died (SIGKILL) without removing them: their lock is free. */
static void clear_dead_dirs(void)
{
	DIR *shm = opendir("/dev/shm");
	struct dirent *e;

	while (shm && (e = readdir(shm))) {
		char name[NAME_MAX + 1];
		int dir_fd, lock_fd;
		struct dirent *f;
		struct stat st;
		DIR *d;

		if (strncmp(e->d_name, DIR_PREFIX, strlen(DIR_PREFIX)))
			continue;
		snprintf(name, sizeof(name), "%s", e->d_name);
		dir_fd = openat(dirfd(shm), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dir_fd < 0)
			continue;
		lock_fd = openat(dir_fd, LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		/* ours (the lock stays the tracer's when the folder goes to -u's user), and free */
		if (lock_fd < 0 || fstat(lock_fd, &st) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || flock(lock_fd, LOCK_EX | LOCK_NB)) {
			if (lock_fd >= 0)
				close(lock_fd);
			close(dir_fd);
			continue;
		}
		d = fdopendir(dir_fd);
		while (d && (f = readdir(d)))
			if (f->d_name[0] != '.')
				unlinkat(dirfd(d), f->d_name, 0);
		if (d)
			closedir(d);
		else
			close(dir_fd);
		close(lock_fd);
		unlinkat(dirfd(shm), name, AT_REMOVEDIR);
	}
	if (shm)
		closedir(shm);
}

/* The command's user must make its ring in the folder and read the agent. */
static int give_to(struct gpu_rings *g, const char *user)
{
	char name[256], home[PATH_MAX];
	uid_t uid;
	gid_t gid;

	if (!user)
		return 0;
	if (launch__lookup_user(user, &uid, &gid, name, sizeof(name), home, sizeof(home)))
		return -ENOENT;
	if (fchown(g->dir_fd, uid, gid) ||
	    fchownat(g->dir_fd, GPUSHM_AGENT_FILE, uid, gid, AT_SYMLINK_NOFOLLOW))
		return -errno;
	g->owner = uid;
	return 0;
}

/* The folder mkdtemp made, held open: a folder of ours alone, or -errno. */
static int hold_dir(struct gpu_rings *g)
{
	const char *name = g->dir + strlen("/dev/shm/");
	struct stat st;

	g->dir_fd = openat(live_shm_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (g->dir_fd < 0)
		return -errno;
	if (fstat(g->dir_fd, &st) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	snprintf(live_name, sizeof(live_name), "%s", name);
	live_dir_fd = g->dir_fd;
	return 0;
}

/* -- CMD: the folder the command's agent is loaded from and makes its ring in, locked. */
static int make_dir(struct gpu_rings *g, const char *user)
{
	char err[256];
	int ret;

	clear_dead_dirs();
	live_shm_fd = safepath__open_dir("/dev/shm", false, 0, err, sizeof(err));
	if (live_shm_fd < 0) {
		log_error("--gpu: %s", err);
		return live_shm_fd;
	}
	snprintf(g->dir, sizeof(g->dir), DIR_TEMPLATE);
	if (!mkdtemp(g->dir)) {
		ret = -errno;
		g->dir[0] = '\0';
		log_error("--gpu: making a folder in /dev/shm: %s", strerror(-ret));
		return ret;
	}
	ret = hold_dir(g);
	if (ret) {
		log_error("--gpu: opening %s: %s", g->dir, strerror(-ret));
		return ret;
	}
	snprintf(live_agent, sizeof(live_agent), "%s/" GPUSHM_AGENT_FILE, g->dir);
	g->lock_fd = openat(g->dir_fd, LOCK_FILE, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_CLOEXEC, 0400);
	if (g->lock_fd < 0 || flock(g->lock_fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		log_error("--gpu: locking %s: %s", g->dir, strerror(-ret));
		return ret;
	}
	ret = write_agent(g->dir_fd);
	if (ret)
		log_error("--gpu: writing the agent into %s: %s", g->dir, strerror(-ret));
	else if ((ret = give_to(g, user)))
		log_error("--gpu: giving %s to %s: %s", g->dir, user, strerror(-ret));
	return ret;
}

static int set_env(struct gpu_rings *g, const char *cupti)
{
	int n = 0;

	snprintf(g->env_inject, sizeof(g->env_inject), "CUDA_INJECTION64_PATH=%s", live_agent);
	snprintf(g->env_dir, sizeof(g->env_dir), GPUSHM_ENV_DIR "=%s", g->dir);
	g->env[n++] = g->env_inject;
	g->env[n++] = g->env_dir;
	if (cupti) {
		char *abs = realpath(cupti, NULL);

		if (!abs) {
			log_error("--cupti %s: %s", cupti, strerror(errno));
			return -1;
		}
		if (asprintf(&g->env_cupti, GPUSHM_ENV_CUPTI "=%s", abs) < 0)
			g->env_cupti = NULL;
		free(abs);
		if (!g->env_cupti)
			return -1;
		g->env[n++] = g->env_cupti;
	}
	g->env[n] = NULL;
	return 0;
}

struct gpu_rings *gpu_rings__create(const char *cupti, const char *user, bool running)
{
	struct gpu_rings *g;
	int ret;

	if (!running && getenv("CUDA_INJECTION64_PATH")) {
		log_error("--gpu: CUDA_INJECTION64_PATH is set already (another tool's agent): "
			  "unset it, or trace without --gpu");
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		log_error("--gpu: out of memory");
		return NULL;
	}
	g->lock_fd = g->dir_fd = -1;
	g->owner = geteuid();
	ret = running ? 0 : make_dir(g, user);
	if (ret || set_env(g, cupti)) {
		gpu_rings__free(g);
		return NULL;
	}
	g->cupti = cupti;
	g->running = running;
	return g;
}

static struct inject_try *try_of(struct gpu_rings *g, __u32 pid)
{
	struct inject_try *grown;

	for (int i = 0; i < g->nr_tries; i++)
		if (g->tries[i].pid == pid)
			return &g->tries[i];
	grown = realloc(g->tries, (g->nr_tries + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	g->tries = grown;
	g->tries[g->nr_tries] = (struct inject_try){ .pid = pid };
	return &g->tries[g->nr_tries++];
}

/* The agent's ring in the process, through its mapping there: any mount namespace. */
static int map_injected(struct gpu_rings *g, __u32 pid, __u64 addr)
{
	char path[96];
	struct gpu_ring *grown;
	struct gpushm_header *h;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)addr, (unsigned long long)addr + GPUSHM_FILE_BYTES);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	h = mmap(NULL, GPUSHM_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED)
		return -ENOMEM;
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != GPUSHM_MAGIC ||
	    h->version != GPUSHM_VERSION || h->header_bytes != GPUSHM_HEADER_BYTES ||
	    h->data_bytes != GPUSHM_DATA_BYTES) {
		munmap(h, GPUSHM_FILE_BYTES);
		return -EPROTO;
	}
	grown = realloc(g->rings, (g->nr_rings + 1) * sizeof(*g->rings));
	if (!grown) {
		munmap(h, GPUSHM_FILE_BYTES);
		return -ENOMEM;
	}
	g->rings = grown;
	g->rings[g->nr_rings++] = (struct gpu_ring){
		.h = h, .data = (const char *)h + GPUSHM_HEADER_BYTES, .pid = pid, .injected = true,
	};
	return 0;
}

void gpu_rings__inject(struct gpu_rings *g, const __u32 *tgids, int nr,
		       void (*around)(void *ctx, __u32 tgid, bool done), void *ctx)
{
	for (int i = 0; i < nr; i++) {
		struct inject_try *t = try_of(g, tgids[i]);
		struct inject_result res;
		char why[256];
		int ret;

		if (!t || t->done)
			continue;
		if (around)
			around(ctx, tgids[i], false);
		ret = inject__agent(tgids[i], g->cupti, &res, why, sizeof(why));
		if (around)
			around(ctx, tgids[i], true);
		if (ret == -EAGAIN && !strstr(why, "CUDA") && ++t->busy >= INJECT_BUSY_TRIES) {
			log_warn("pid %u: --gpu: %s; tracing it host-only", t->pid, why);
			t->done = true;
			continue;
		}
		if (ret == -EAGAIN)
			continue;	/* no CUDA yet, or busy: next time */
		t->done = true;
		if (!ret && (ret = map_injected(g, t->pid, res.ring_addr)))
			snprintf(why, sizeof(why), "its ring cannot be mapped: %s", strerror(-ret));
		if (ret) {
			log_warn("pid %u: --gpu: %s; tracing it host-only", t->pid, why);
			continue;
		}
		log_info("pid %u: GPU agent %s after a %.2f ms stop of thread %u",
			 t->pid, res.reused ? "woken" : "in", res.stop_ns / 1e6, res.tid);
	}
}

char *const *gpu_rings__env(const struct gpu_rings *g)
{
	return g->env;
}

/* 1 mapped, 0 not ready yet (try again), -1 refused (removed). */
static int map_ring(struct gpu_rings *g, const char *name, struct gpu_ring *out)
{
	int fd = openat(g->dir_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct gpushm_header *h;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != g->owner || st.st_nlink != 1 ||
	    st.st_size != GPUSHM_FILE_BYTES) {
		close(fd);
		/* one the agent has not sized yet comes back next time */
		return S_ISREG(st.st_mode) && st.st_size == 0 ? 0 : -1;
	}
	h = mmap(NULL, GPUSHM_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED)
		return -1;
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != GPUSHM_MAGIC) {
		munmap(h, GPUSHM_FILE_BYTES);
		return 0;
	}
	if (h->version != GPUSHM_VERSION || h->header_bytes != GPUSHM_HEADER_BYTES ||
	    h->data_bytes != GPUSHM_DATA_BYTES) {
		munmap(h, GPUSHM_FILE_BYTES);
		return -1;
	}
	memset(out, 0, sizeof(*out));
	out->h = h;
	out->data = (const char *)h + GPUSHM_HEADER_BYTES;
	out->pid = h->pid;
	return 1;
}

/* A listing of the held folder (never of what its name leads to now); NULL when none. */
static DIR *list_dir(const struct gpu_rings *g)
{
	int fd = g->dir_fd >= 0 ? openat(g->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	return d;
}

static void find_rings(struct gpu_rings *g)
{
	char path[sizeof(g->dir) + 300];
	struct dirent *e;
	DIR *d = list_dir(g);

	while (d && (e = readdir(d))) {
		struct gpu_ring *grown;
		int ret;

		if (strncmp(e->d_name, GPUSHM_RING_PREFIX, strlen(GPUSHM_RING_PREFIX)))
			continue;
		grown = realloc(g->rings, (g->nr_rings + 1) * sizeof(*g->rings));
		if (!grown)
			break;
		g->rings = grown;
		snprintf(path, sizeof(path), "%s/%s", g->dir, e->d_name);
		ret = map_ring(g, e->d_name, &g->rings[g->nr_rings]);
		if (ret > 0)
			g->nr_rings++;
		if (ret)
			unlinkat(g->dir_fd, e->d_name, 0);
		if (ret < 0)
			log_warn("--gpu: %s is no ring an agent made: ignored", path);
	}
	if (d)
		closedir(d);
}

static bool record_ok(const void *rec, int size)
{
	const struct sp_rec_hdr *h = rec;

	switch (h->type) {
	case SP_REC_GPU:
		return size == sizeof(struct sp_gpu_rec);
	case SP_REC_GPU_STATE:
		return size == sizeof(struct sp_gpu_state_rec);
	case SP_REC_GPU_NAME:
		return size > (int)sizeof(struct sp_gpu_name_rec) &&
		       size <= (int)sizeof(struct sp_gpu_name_rec) + SP_GPU_NAME_MAX;
	default:
		return false;
	}
}

/* What an agent that is not on says, once per process and status. */
static void tell_state(struct gpu_ring *r, const struct sp_gpu_state_rec *s)
{
	__u32 st = s->status <= SP_GPU_OFF ? s->status : SP_GPU_FAILED;

	r->last = *s;
	if (r->told[st])
		return;
	r->told[st] = true;
	switch (st) {
	case SP_GPU_ON:
		log_debug("pid %u: --gpu: CUPTI %u from %s", r->pid, s->cupti_version, s->detail);
		break;
	case SP_GPU_NO_CUPTI:
		log_warn("pid %u: --gpu: no libcupti found (%s; --cupti PATH names one); tracing "
			 "host-only\n", r->pid, s->detail);
		break;
	case SP_GPU_IN_USE:
		log_warn("pid %u: --gpu: another CUPTI client (torch.profiler, Nsight) holds the "
			 "process; tracing host-only\n", r->pid);
		break;
	case SP_GPU_NO_GRAPH_TRACE:
		log_warn("pid %u: --gpu: CUPTI %u has no graph-level records (%s; CUDA 11.7 on "
			 "has them); tracing host-only\n", r->pid, s->cupti_version, s->detail);
		break;
	case SP_GPU_OFF:
		/* leaving with its process says nothing; leaving without a heartbeat does */
		if (r->told[SP_GPU_ON] && !strstr(s->detail, "exits") &&
		    !strstr(s->detail, "detached"))
			log_warn("pid %u: --gpu: the agent turned off: %s", r->pid, s->detail);
		break;
	default:
		log_warn("pid %u: --gpu: %s; tracing host-only", r->pid, s->detail);
		break;
	}
}

static int drain(struct gpu_ring *r, session_record_fn emit, void *ctx)
{
	union {
		struct sp_rec_hdr hdr;
		struct sp_gpu_rec gpu;
		struct sp_gpu_name_rec name;
		struct sp_gpu_state_rec state;
		unsigned char bytes[GPUSHM_MAX_RECORD];
	} u;
	int size, n = 0, ret;

	while (!r->broken) {
		size = gpushm__get(r->h, r->data, GPUSHM_DATA_BYTES, &u, sizeof(u));
		if (!size)
			break;
		if (size < 0 || !record_ok(&u, size)) {
			r->broken = true;
			log_warn("pid %u: --gpu: its ring holds a record that makes no sense: "
				 "no more of its GPU records are read", r->pid);
			break;
		}
		/* a process speaks for itself only */
		u.gpu.tgid = r->pid;
		if (u.hdr.type == SP_REC_GPU_NAME)
			u.bytes[size - 1] = '\0';
		if (u.hdr.type == SP_REC_GPU_STATE) {
			u.state.detail[SP_GPU_DETAIL - 1] = '\0';
			tell_state(r, &u.state);
		}
		ret = emit(ctx, &u, size);
		if (ret)
			return ret;
		n++;
	}
	return n;
}

int gpu_rings__poll(struct gpu_rings *g, session_record_fn emit, void *ctx)
{
	int total = 0;

	find_rings(g);
	for (int i = 0; i < g->nr_rings; i++) {
		struct gpu_ring *r = &g->rings[i];
		int n;

		__atomic_fetch_add(&r->h->heartbeat, 1, __ATOMIC_RELEASE);
		n = drain(r, emit, ctx);
		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

static bool all_closed(const struct gpu_rings *g)
{
	for (int i = 0; i < g->nr_rings; i++) {
		const struct gpu_ring *r = &g->rings[i];

		if (!r->broken && !__atomic_load_n(&r->h->closed, __ATOMIC_ACQUIRE))
			return false;
	}
	return true;
}

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static void tell_losses(const struct gpu_rings *g)
{
	for (int i = 0; i < g->nr_rings; i++) {
		const struct gpu_ring *r = &g->rings[i];
		__u64 ring = __atomic_load_n(&r->h->ring_dropped, __ATOMIC_RELAXED);

		if (r->last.cupti_dropped || ring)
			log_warn("pid %u: --gpu: GPU records lost: %llu dropped by CUPTI, %llu found "
				 "the ring full", r->pid, (unsigned long long)r->last.cupti_dropped,
				 (unsigned long long)ring);
	}
}

int gpu_rings__finish(struct gpu_rings *g, int wait_ms, session_record_fn emit, void *ctx)
{
	__u64 deadline = mono_ms() + wait_ms;
	int ret;

	/* injected agents turn off, flush and let their rings go */
	for (int i = 0; i < g->nr_rings; i++)
		if (g->rings[i].injected)
			__atomic_store_n(&g->rings[i].h->detach, 1, __ATOMIC_RELEASE);

	/* closed is read before the last drain, so the records it vouches for are taken */
	for (;;) {
		bool closed = all_closed(g);

		ret = gpu_rings__poll(g, emit, ctx);
		if (ret < 0 || closed || mono_ms() >= deadline)
			break;
		usleep(10000);
	}
	tell_losses(g);
	return ret < 0 ? ret : 0;
}

/* The folder's name in /dev/shm, removed only while it is still our folder (not a link). */
static void remove_dir(int dir_fd)
{
	struct stat held, named;

	if (dir_fd < 0 || live_shm_fd < 0 || !live_name[0] || fstat(dir_fd, &held) ||
	    fstatat(live_shm_fd, live_name, &named, AT_SYMLINK_NOFOLLOW) ||
	    held.st_dev != named.st_dev || held.st_ino != named.st_ino)
		return;
	unlinkat(live_shm_fd, live_name, AT_REMOVEDIR);
}

void gpu_rings__free(struct gpu_rings *g)
{
	struct dirent *e;
	DIR *d;

	if (!g)
		return;
	for (int i = 0; i < g->nr_rings; i++)
		munmap(g->rings[i].h, GPUSHM_FILE_BYTES);
	free(g->rings);
	free(g->tries);
	d = list_dir(g);
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	remove_dir(g->dir_fd);
	if (g->lock_fd >= 0)
		close(g->lock_fd);
	if (g->dir_fd >= 0)
		close(g->dir_fd);
	if (live_shm_fd >= 0)
		close(live_shm_fd);
	live_dir_fd = live_shm_fd = -1;
	live_name[0] = live_agent[0] = '\0';
	free(g->env_cupti);
	free(g);
}

void gpu_rings__remove_now(void)
{
	if (live_dir_fd < 0)
		return;
	unlinkat(live_dir_fd, GPUSHM_AGENT_FILE, 0);
	unlinkat(live_dir_fd, LOCK_FILE, 0);
	remove_dir(live_dir_fd);
}
