/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * -- CMD: a child that waits on a pipe until the probes are in place, then
 * execs the command, optionally as another user, with the environment as is
 * (plus what --gpu adds).
 */
#ifndef __LAUNCH_H
#define __LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

struct launch {
	pid_t pid;
	int go_fd;		/* write end of the pipe the child waits on */
};

/*
 * Fork the waiting child; 0, or -errno with a one-line reason in err. env:
 * NAME=VALUE strings added to the command's environment only (NULL-terminated;
 * NULL: none).
 */
int launch__start(struct launch *l, char *const *cmd, const char *user, char *const *env,
		  char *err, size_t err_sz);
/* Let the child exec the command. */
int launch__go(struct launch *l);
/* Tracing could not start: the child exits without running the command. */
void launch__abort(struct launch *l);
/*
 * uid, gid and home of USER (a name or a number) from /etc/passwd; the
 * supplementary groups from /etc/group. 0 or -ENOENT.
 */
int launch__lookup_user(const char *user, uid_t *uid, gid_t *gid, char *name, size_t name_sz,
			char *home, size_t home_sz);

#endif /* __LAUNCH_H */
