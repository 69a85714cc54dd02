// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The activity agent as specprobe carries it, loaded as the CUDA driver loads
 * it: without SPECPROBE_GPU_DIR it does nothing; with a libcupti that cannot
 * be loaded it leaves one SP_REC_GPU_STATE (SP_GPU_NO_CUPTI) in ring.PID and
 * steps back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "gpu_agent.h"
#include "gpushm.h"
#include "specprobe.h"
#include "scratch_dir.h"

static int (*initialize)(void);
static char agent_dir[256];

static int entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* The carried bytes into a file of their own, loaded as the driver would. */
static int load_agent(void **state)
{
	char path[512];
	void *handle;
	int fd;

	snprintf(agent_dir, sizeof(agent_dir), "/tmp/gpuagent-so.XXXXXX");
	if (!mkdtemp(agent_dir))
		return -1;
	snprintf(path, sizeof(path), "%s/" GPUSHM_AGENT_FILE, agent_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0500);
	if (fd < 0 || write(fd, specprobe_gpu_agent, specprobe_gpu_agent_size) !=
			      (ssize_t)specprobe_gpu_agent_size)
		return -1;
	close(fd);
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	unlink(path);
	rmdir(agent_dir);
	if (!handle)
		return -1;
	*(void **)&initialize = dlsym(handle, "InitializeInjection");
	return initialize ? 0 : -1;
}

static int setup(void **state)
{
	return scratch_dir_new(state, "gpuagent");
}

static int teardown(void **state)
{
	return scratch_dir_free(state);
}

static void test_no_dir_does_nothing(void **state)
{
	const char *dir = *state;

	unsetenv(GPUSHM_ENV_DIR);
	setenv(GPUSHM_ENV_CUPTI, "/nonexistent", 1);
	assert_int_equal(initialize(), 1);
	setenv(GPUSHM_ENV_DIR, "", 1);
	assert_int_equal(initialize(), 1);
	assert_int_equal(entries(dir), 0);
}

static void test_no_cupti(void **state)
{
	const char *dir = *state;
	union {
		struct sp_gpu_state_rec s;
		unsigned char bytes[GPUSHM_MAX_RECORD];
	} u;
	struct gpushm_header *h;
	struct stat st;
	char path[512];
	int fd;

	setenv(GPUSHM_ENV_DIR, dir, 1);
	setenv(GPUSHM_ENV_CUPTI, "/nonexistent/libcupti.so", 1);
	assert_int_equal(initialize(), 1);
	/* the driver calls it once; a second call makes no second ring */
	assert_int_equal(initialize(), 1);
	assert_int_equal(entries(dir), 1);
	snprintf(path, sizeof(path), "%s/" GPUSHM_RING_PREFIX "%d", dir, getpid());
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, GPUSHM_FILE_BYTES);
	assert_int_equal(st.st_mode & 0777, 0600);
	h = mmap(NULL, GPUSHM_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(h != MAP_FAILED);
	assert_int_equal(h->magic, GPUSHM_MAGIC);
	assert_int_equal(h->version, GPUSHM_VERSION);
	assert_int_equal(h->header_bytes, GPUSHM_HEADER_BYTES);
	assert_int_equal(h->data_bytes, GPUSHM_DATA_BYTES);
	assert_int_equal(h->pid, getpid());
	assert_int_equal(h->closed, 1);
	assert_int_equal(gpushm__get(h, (char *)h + GPUSHM_HEADER_BYTES, GPUSHM_DATA_BYTES, &u,
				     sizeof(u)), sizeof(u.s));
	assert_int_equal(u.s.type, SP_REC_GPU_STATE);
	assert_int_equal(u.s.tgid, getpid());
	assert_int_equal(u.s.status, SP_GPU_NO_CUPTI);
	assert_int_equal(u.s.cupti_version, 0);
	assert_int_equal(u.s.records, 0);
	assert_int_equal(u.s.flushed_ns, 0);
	assert_non_null(strstr(u.s.detail, "/nonexistent/libcupti.so"));
	assert_int_equal(gpushm__get(h, (char *)h + GPUSHM_HEADER_BYTES, GPUSHM_DATA_BYTES, &u,
				     sizeof(u)), 0);
	assert_int_equal(h->ring_dropped, 0);
	munmap(h, GPUSHM_FILE_BYTES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_dir_does_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_cupti, setup, teardown),
	};

	if (load_agent(NULL)) {
		fprintf(stderr, "loading the carried agent: %s\n", dlerror());
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
