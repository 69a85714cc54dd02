// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "targets.h"

int targets__lib_kind(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strncmp(base, "libcuda.so", 10) == 0)
		return SP_LIB_CUDA;
	if (strncmp(base, "libnccl.so", 10) == 0)
		return SP_LIB_NCCL;
	return -1;
}

/* State and parent of a process from /proc/PID/stat; false if it is gone. */
static bool read_stat(__u32 pid, char *state, int *ppid)
{
	char path[64], buf[512], *close_paren;
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		/* the command name may hold spaces and parentheses: parse after the last ')' */
		close_paren = strrchr(buf, ')');
		ok = close_paren && sscanf(close_paren + 1, " %c %d", state, ppid) == 2;
	}
	fclose(f);
	return ok;
}

bool targets__read_state(__u32 tgid, char *state)
{
	int ppid;

	return read_stat(tgid, state, &ppid);
}

bool targets__cpu_ns(__u32 tgid, __u64 *cpu_ns)
{
	unsigned long long utime, stime;
	char path[64], buf[1024], *close_paren;
	long ticks = sysconf(_SC_CLK_TCK);
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", tgid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f) && ticks > 0) {
		close_paren = strrchr(buf, ')');
		/* fields 14 and 15; after ')' come state (3) and ten more before them */
		ok = close_paren &&
		     sscanf(close_paren + 1,
			    " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
			    &stime) == 2;
		if (ok)
			*cpu_ns = (utime + stime) * (1000000000ull / ticks);
	}
	fclose(f);
	return ok;
}

int targets__runq_delays(__u32 tgid, __u64 ts, struct sp_runq_rec *out, int room)
{
	char path[64], line[128];
	struct dirent *de;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/task", tgid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (n < room && (de = readdir(dir))) {
		unsigned long long on_cpu, delay;
		unsigned long tid;
		char *end;
		FILE *f;

		tid = strtoul(de->d_name, &end, 10);
		if (*end || !tid)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%lu/schedstat", tgid, tid);
		f = fopen(path, "re");
		if (!f)
			continue;
		out[n] = (struct sp_runq_rec){ .type = SP_REC_RUNQ, .size = sizeof(out[n]),
					       .tgid = tgid, .tid = tid, .when = SP_RUNQ_MARK,
					       .ts = ts };
		if (fgets(line, sizeof(line), f) &&
		    sscanf(line, "%llu %llu", &on_cpu, &delay) == 2) {
			out[n].run_delay_ns = delay;
			n++;
		}
		fclose(f);
	}
	closedir(dir);
	return n;
}

__u32 targets__ns_pid(__u32 tgid)
{
	char path[64], line[256];
	__u32 ns_pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", tgid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		/* outermost first: the last number is the pid the process sees */
		for (unsigned long v = strtoul(p, &end, 10); end != p; v = strtoul(p, &end, 10)) {
			ns_pid = v;
			p = end;
		}
		break;
	}
	fclose(f);
	return ns_pid == tgid ? 0 : ns_pid;
}

bool targets__alive(__u32 tgid)
{
	char state;
	int ppid;

	return read_stat(tgid, &state, &ppid) && state != 'Z' && state != 'X';
}

static bool has_tgid(const struct targets *t, __u32 tgid)
{
	for (int i = 0; i < t->nr_tgids; i++)
		if (t->tgids[i] == tgid)
			return true;
	return false;
}

int targets__add_tgid(struct targets *t, __u32 tgid)
{
	__u32 *grown;

	if (has_tgid(t, tgid))
		return 0;
	grown = realloc(t->tgids, (t->nr_tgids + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	t->tgids = grown;
	t->tgids[t->nr_tgids++] = tgid;
	return 0;
}

int targets__remove_tgid(struct targets *t, __u32 tgid, int *maps_mark)
{
	int at = -1, kept = 0, mark = *maps_mark;

	for (int i = 0; i < t->nr_maps; i++) {
		if (t->maps[i].tgid != tgid)
			t->maps[kept++] = t->maps[i];
		else if (i < mark)
			(*maps_mark)--;
	}
	t->nr_maps = kept;
	for (int i = 0; i < t->nr_tgids && at < 0; i++)
		if (t->tgids[i] == tgid)
			at = i;
	if (at < 0)
		return -1;
	memmove(&t->tgids[at], &t->tgids[at + 1], (t->nr_tgids - at - 1) * sizeof(*t->tgids));
	t->nr_tgids--;
	return at;
}

/* Add every live descendant of the tgids already listed. */
int targets__add_descendants(struct targets *t)
{
	struct dirent *de;
	bool grew = true;
	int err = 0;

	while (grew && !err) {
		DIR *proc = opendir("/proc");

		if (!proc)
			return -errno;
		grew = false;
		while ((de = readdir(proc)) && !err) {
			int pid = atoi(de->d_name), ppid;
			char state;

			if (pid <= 0 || has_tgid(t, pid) || !read_stat(pid, &state, &ppid))
				continue;
			if (ppid > 0 && has_tgid(t, ppid)) {
				err = targets__add_tgid(t, pid);
				grew = true;
			}
		}
		closedir(proc);
	}
	return err;
}

int targets__find_lib(const struct targets *t, __u64 dev, __u64 ino)
{
	for (int i = 0; i < t->nr_libs; i++)
		if (t->libs[i].dev == dev && t->libs[i].ino == ino)
			return i;
	return -1;
}

/* Append one file to a table of libraries; its index or -ENOMEM. */
static int append_file(struct target_lib **table, int *nr, const char *path,
		       const char *open_path, const struct stat *st, int kind)
{
	struct target_lib *grown = realloc(*table, (*nr + 1) * sizeof(*grown));
	char fd_path[32];
	int fd;

	if (!grown)
		return -ENOMEM;
	*table = grown;
	/*
	 * A map_files path lasts only while the process keeps the mapping: one that
	 * exits or execs before the probes are attached would take the file with it.
	 */
	fd = open(open_path, O_PATH | O_CLOEXEC);
	if (fd >= 0)
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
	grown[*nr] = (struct target_lib){
		.path = strdup(path),
		.open_path = strdup(fd >= 0 ? fd_path : open_path),
		.fd = fd,
		.dev = st->st_dev,
		.ino = st->st_ino,
		.kind = kind,
	};
	if (!grown[*nr].path || !grown[*nr].open_path) {
		free(grown[*nr].path);
		free(grown[*nr].open_path);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	return (*nr)++;
}

static int add_lib(struct targets *t, const char *path, const char *open_path,
		   const struct stat *st, int kind)
{
	return append_file(&t->libs, &t->nr_libs, path, open_path, st, kind);
}

static int add_map(struct targets *t, __u32 tgid, int lib, __u64 start, __u64 end, __u64 pgoff)
{
	struct tf_map *grown;

	/* a process is scanned again when it maps another library */
	for (int i = 0; i < t->nr_maps; i++)
		if (t->maps[i].tgid == tgid && t->maps[i].start == start && t->maps[i].end == end)
			return 0;
	grown = realloc(t->maps, (t->nr_maps + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	t->maps = grown;
	grown[t->nr_maps++] = (struct tf_map){ tgid, lib, start, end, pgoff };
	t->maps_ever++;
	return 0;
}

int targets__inherit_maps(struct targets *t, __u32 parent, __u32 child)
{
	for (int i = 0, n = t->nr_maps; i < n; i++) {
		struct tf_map m = t->maps[i];
		int ret = m.tgid == parent ? add_map(t, child, m.lib, m.start, m.end, m.pgoff) : 0;

		if (ret)
			return ret;
	}
	return 0;
}

/* The glibc dynamic loader: ld-linux-x86-64.so.2 and its kin. */
static bool is_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strncmp(base ? base + 1 : path, "ld-linux", 8);
}

static int add_loader(struct targets *t, const char *path, const char *open_path,
		      const struct stat *st)
{
	for (int i = 0; i < t->nr_loaders; i++)
		if (t->loaders[i].dev == st->st_dev && t->loaders[i].ino == st->st_ino)
			return 0;
	return append_file(&t->loaders, &t->nr_loaders, path, open_path, st, -1) < 0 ? -ENOMEM : 0;
}

/* One line of /proc/PID/maps naming a CUDA or NCCL library. */
static int scan_map_line(struct targets *t, __u32 tgid, const char *line)
{
	unsigned long long start, end, pgoff;
	char open_path[PATH_MAX + 64], mapped[PATH_MAX];
	struct stat st;
	int kind, lib;

	if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095[^\n]", &start, &end, &pgoff,
		   mapped) != 4)
		return 0;
	kind = targets__lib_kind(mapped);
	if (mapped[0] != '/' || (kind < 0 && !is_loader(mapped)))
		return 0;
	/* map_files reaches the mapped file even in another mount namespace */
	snprintf(open_path, sizeof(open_path), "/proc/%u/map_files/%llx-%llx", tgid, start, end);
	if (stat(open_path, &st)) {
		snprintf(open_path, sizeof(open_path), "/proc/%u/root%s", tgid, mapped);
		if (stat(open_path, &st))
			return 0;
	}
	if (kind < 0)
		return add_loader(t, mapped, open_path, &st);
	lib = targets__find_lib(t, st.st_dev, st.st_ino);
	if (lib < 0)
		lib = add_lib(t, mapped, open_path, &st, kind);
	if (lib < 0)
		return lib;
	return add_map(t, tgid, lib, start, end, pgoff);
}

/* Each line of /proc/PID/maps to fn; 0 (also when the process is gone) or fn's error. */
static int each_maps_line(__u32 tgid, int (*fn)(void *ctx, __u32 tgid, const char *line),
			  void *ctx)
{
	char path[64], line[PATH_MAX + 128];
	int err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		return 0;	/* exited meanwhile */
	while (!err && fgets(line, sizeof(line), f))
		err = fn(ctx, tgid, line);
	fclose(f);
	return err;
}

static int scan_line(void *ctx, __u32 tgid, const char *line)
{
	return scan_map_line(ctx, tgid, line);
}

int targets__scan(struct targets *t, __u32 tgid)
{
	return each_maps_line(tgid, scan_line, t);
}

/* Which mappings of a process hold memory the driver pinned (shared, /dev/zero or /dev/nvidia*). */
static __u32 hostmem_kind(const char *perms, const char *path)
{
	if (perms[3] == 's' && (!strncmp(path, "/dev/zero", 9) || !strncmp(path, "/dev/nvidia", 11)))
		return SP_HOSTMEM_DRIVER;
	return SP_HOSTMEM_PRIVATE;
}

struct host_walk {
	hostmem_fn fn;
	void *ctx;
};

static int host_line(void *ctx, __u32 tgid, const char *line)
{
	const struct host_walk *hw = ctx;
	char perms[8], mapped[PATH_MAX] = "";
	unsigned long long start, end;

	if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]", &start, &end, perms, mapped) <
		    3 || strlen(perms) < 4 || perms[1] != 'w')
		return 0;
	return hw->fn(hw->ctx, start, end, hostmem_kind(perms, mapped));
}

int targets__host_mappings(__u32 tgid, hostmem_fn fn, void *ctx)
{
	struct host_walk hw = { fn, ctx };

	return each_maps_line(tgid, host_line, &hw);
}

struct exec_walk {
	exec_map_fn fn;
	void *ctx;
};

static int exec_line(void *ctx, __u32 tgid, const char *line)
{
	const struct exec_walk *ew = ctx;
	unsigned long long start, end, pgoff;
	char perms[8], mapped[PATH_MAX] = "";

	if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &start, &end, perms, &pgoff,
		   mapped) < 4 || strlen(perms) < 4 || perms[2] != 'x')
		return 0;
	return ew->fn(ew->ctx, start, end, pgoff, mapped);
}

int targets__exec_mappings(__u32 tgid, exec_map_fn fn, void *ctx)
{
	struct exec_walk ew = { fn, ctx };

	return each_maps_line(tgid, exec_line, &ew);
}

int targets__discover(const int *pids, int nr_pids, bool may_wait, struct targets *t, char *err,
		      size_t err_sz)
{
	int ret;

	for (int i = 0; i < nr_pids; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d", pids[i]);
		if (pids[i] <= 0 || stat(path, &st)) {
			snprintf(err, err_sz, "no process with pid %d", pids[i]);
			return -ESRCH;
		}
		if ((ret = targets__add_tgid(t, pids[i])))
			goto oom;
	}
	if ((ret = targets__add_descendants(t)))
		goto oom;
	for (int i = 0; i < t->nr_tgids; i++)
		if ((ret = targets__scan(t, t->tgids[i])))
			goto oom;
	if (t->nr_libs == 0 && !may_wait) {
		snprintf(err, err_sz,
			 "pid %d%s maps no libcuda.so or libnccl.so: is it a CUDA process?", pids[0],
			 t->nr_tgids > 1 ? " and its descendants" : "");
		return -ENOENT;
	}
	return 0;
oom:
	snprintf(err, err_sz, "reading /proc: %s", strerror(-ret));
	return ret;
}

int targets__add_lib_file(struct targets *t, const char *path, char *err, size_t err_sz)
{
	struct stat st;
	int kind = targets__lib_kind(path), lib;

	if (stat(path, &st)) {
		snprintf(err, err_sz, "%s: %s", path, strerror(errno));
		return -errno;
	}
	/* a FIFO would hang the symbol reading: only a regular file is a library */
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, err_sz, "%s is not a regular file: give the shared library itself",
			 path);
		return -EINVAL;
	}
	if (kind < 0)
		kind = SP_LIB_CUDA;
	lib = targets__find_lib(t, st.st_dev, st.st_ino);
	if (lib < 0)
		lib = add_lib(t, path, path, &st, kind);
	return lib < 0 ? lib : 0;
}

static void target_lib__release(struct target_lib *tl)
{
	free(tl->path);
	free(tl->open_path);
	if (tl->fd >= 0)
		close(tl->fd);
}

void targets__free(struct targets *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nr_libs; i++)
		target_lib__release(&t->libs[i]);
	free(t->libs);
	for (int i = 0; i < t->nr_loaders; i++)
		target_lib__release(&t->loaders[i]);
	free(t->loaders);
	free(t->tgids);
	free(t->maps);
	*t = (struct targets){ 0 };
}
