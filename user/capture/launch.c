// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "host.h"
#include "parse.h"
#include "launch.h"

#define MAX_GROUPS 64

/*
 * /etc/passwd and /etc/group are read directly: NSS lookups would make the
 * static binary depend on the host's shared libraries at run time.
 */
int launch__lookup_user(const char *user, uid_t *uid, gid_t *gid, char *name, size_t name_sz,
			char *home, size_t home_sz)
{
	char line[1024];
	unsigned long num;
	bool numeric = !parse__ulong(user, &num);
	int ret = -ENOENT;
	FILE *f = fopen("/etc/passwd", "re");

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		char *fields[7], *p = line;
		int n = 0;

		line[strcspn(line, "\n")] = '\0';
		/* strsep keeps empty fields (an empty password field is common) */
		while (n < 7 && (fields[n] = strsep(&p, ":")))
			n++;
		if (n < 6)
			continue;
		if (numeric ? strtoul(fields[2], NULL, 10) != num : strcmp(fields[0], user))
			continue;
		*uid = strtoul(fields[2], NULL, 10);
		*gid = strtoul(fields[3], NULL, 10);
		snprintf(name, name_sz, "%s", fields[0]);
		snprintf(home, home_sz, "%s", fields[5]);
		ret = 0;
	}
	fclose(f);
	if (ret && numeric) {
		/* a uid without a passwd entry still names a user */
		*uid = *gid = num;
		snprintf(name, name_sz, "%lu", num);
		snprintf(home, home_sz, "/");
		ret = 0;
	}
	return ret;
}

static int user_groups(const char *name, gid_t primary, gid_t *groups)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen("/etc/group", "re");

	groups[n++] = primary;
	if (!f)
		return n;
	while (n < MAX_GROUPS && fgets(line, sizeof(line), f)) {
		char *p = line, *group_name, *gid_str, *members, *member;

		line[strcspn(line, "\n")] = '\0';
		group_name = strsep(&p, ":");
		strsep(&p, ":");
		gid_str = strsep(&p, ":");
		members = p;
		if (!group_name || !gid_str || !members)
			continue;
		while ((member = strsep(&members, ",")))
			if (!strcmp(member, name) && (gid_t)strtoul(gid_str, NULL, 10) != primary) {
				groups[n++] = strtoul(gid_str, NULL, 10);
				break;
			}
	}
	fclose(f);
	return n;
}

struct run_as {
	bool set;
	uid_t uid;
	gid_t gid;
	gid_t groups[MAX_GROUPS];
	int nr_groups;
	char name[256];
	char home[PATH_MAX];
};

static void child_run(int go_fd, char *const *cmd, const struct run_as *as, char *const *env)
{
	char go;

	/* no byte means tracing could not start: do not run untraced */
	if (read(go_fd, &go, 1) != 1)
		_exit(127);
	close(go_fd);
	host__restore_nofile();
	signal(SIGPIPE, SIG_DFL);
	if (as->set) {
		if (setgroups(as->nr_groups, as->groups) || setgid(as->gid) || setuid(as->uid)) {
			fprintf(stderr, "specprobe: running as %s: %s\n", as->name, strerror(errno));
			_exit(127);
		}
		/* the rest of the environment passes through (LD_LIBRARY_PATH too) */
		setenv("HOME", as->home, 1);
		setenv("USER", as->name, 1);
		setenv("LOGNAME", as->name, 1);
	}
	for (; env && *env; env++)
		putenv(*env);
	execvp(cmd[0], cmd);
	fprintf(stderr, "specprobe: %s: %s\n", cmd[0], strerror(errno));
	_exit(127);
}

int launch__start(struct launch *l, char *const *cmd, const char *user, char *const *env,
		  char *err, size_t err_sz)
{
	struct run_as as = { 0 };
	int fds[2];

	l->pid = 0;
	l->go_fd = -1;
	if (user) {
		if (launch__lookup_user(user, &as.uid, &as.gid, as.name, sizeof(as.name), as.home,
					sizeof(as.home))) {
			snprintf(err, err_sz, "no user '%s' in /etc/passwd", user);
			return -ENOENT;
		}
		as.nr_groups = user_groups(as.name, as.gid, as.groups);
		as.set = true;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		snprintf(err, err_sz, "pipe: %s", strerror(errno));
		return -errno;
	}
	l->pid = fork();
	if (l->pid < 0) {
		snprintf(err, err_sz, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (l->pid == 0) {
		close(fds[1]);
		child_run(fds[0], cmd, &as, env);
	}
	close(fds[0]);
	l->go_fd = fds[1];
	return 0;
}

int launch__go(struct launch *l)
{
	int ret = write(l->go_fd, "g", 1) == 1 ? 0 : -errno;

	close(l->go_fd);
	l->go_fd = -1;
	return ret;
}

void launch__abort(struct launch *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd);
	l->go_fd = -1;
	if (l->pid > 0)
		waitpid(l->pid, NULL, 0);
	l->pid = 0;
}
