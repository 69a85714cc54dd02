# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
OUTPUT := .output
CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool

ARCH_RAW := $(shell uname -m)
ARCH := $(shell echo $(ARCH_RAW) | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ifeq ($(filter x86,$(ARCH)),)
$(error unsupported architecture $(ARCH_RAW): argument reading is written for x86-64)
endif
VMLINUX := vmlinux/$(ARCH_RAW)/vmlinux.h

WARN := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS ?= -g -O2
override CFLAGS += $(WARN) -std=gnu11 -D_GNU_SOURCE
# user/<layer>/: every layer folder is on the include path, headers are named bare.
USER_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard user/*/*.c user/*/*.h))))
INCLUDES := -I$(OUTPUT) -Ibpf $(addprefix -I,$(USER_DIRS))
LDLIBS := -lbpf -lelf -lz -lncurses -ltinfo
STATIC_LDLIBS := -l:libbpf.a -l:libelf.a -l:libz.a -l:libzstd.a -l:libncurses.a -l:libtinfo.a

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# The --gpu activity agent: a shared library loaded into the target, never linked into
# specprobe; specprobe carries it as bytes (user/capture/gpu_agent.S).
CUDA_INCLUDE ?= /usr/local/cuda/include
AGENT_SRCS := $(wildcard user/gpuagent/*.c)
AGENT_SO := $(OUTPUT)/gpuagent/libspecprobe-gpu.so
AGENT_BLOB := $(OUTPUT)/gpuagent/agent_blob.o
AGENT_CFLAGS := -g -O2 $(WARN) -std=gnu11 -D_GNU_SOURCE -fPIC -fvisibility=hidden

USER_SRCS := $(filter-out $(AGENT_SRCS),$(wildcard user/*/*.c))
USER_HDRS := $(wildcard user/*/*.h)
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS)) $(AGENT_BLOB)
LIB_OBJS := $(filter-out $(OUTPUT)/user/cli/main.o,$(USER_OBJS))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))

DEB_PACKAGES := clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libzstd-dev \
	libncurses-dev libcmocka-dev make gcc tmux python3 \
	protobuf-compiler libclang-rt-dev prometheus

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.PHONY: all static test unit-test sanitize-test asan integration-test deps vmlinux clean tools demo \
	install

PREFIX ?= /usr/local

all: specprobe tools

specprobe: $(USER_OBJS) | $(OUTPUT)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# One self-contained binary for GPU hosts.
static: $(USER_OBJS)
	$(call msg,STATIC,specprobe-static)
	$(Q)$(CC) $(CFLAGS) -static $^ $(STATIC_LDLIBS) -lpthread -o specprobe-static

$(OUTPUT) $(OUTPUT)/user $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c bpf/*.h $(VMLINUX) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH_RAW) -Ibpf \
		-c $< -o $(@:.o=.tmp.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)
	$(Q)rm -f $(@:.o=.tmp.o)

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o | $(OUTPUT)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/user/%.o: user/%.c $(USER_HDRS) bpf/*.h $(BPF_SKELS) | $(OUTPUT)/user
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@

$(AGENT_SO): $(AGENT_SRCS) $(wildcard user/gpuagent/*.h) bpf/specprobe.h
	$(call msg,AGENT,$@)
	$(Q)test -f $(CUDA_INCLUDE)/cupti.h || { echo "$(CUDA_INCLUDE)/cupti.h not found:" \
		"the --gpu agent builds against CUPTI's headers (set CUDA_INCLUDE)" >&2; exit 1; }
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(AGENT_CFLAGS) -Ibpf -Iuser/gpuagent -I$(CUDA_INCLUDE) -shared $(AGENT_SRCS) \
		-ldl -lpthread -o $@

$(AGENT_BLOB): user/capture/gpu_agent.S $(AGENT_SO)
	$(call msg,AS,$@)
	$(Q)$(CC) -c -Wa,-I$(OUTPUT) $< -o $@

include tools/tools.mk
include tests/fuzz/fuzz.mk

$(OUTPUT)/tests/%: tests/unit/%.c $(LIB_OBJS) | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $< $(LIB_OBJS) $(LDLIBS) -lcmocka -o $@

unit-test: $(UNIT_BINS)
	$(Q)set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

integration-test: specprobe tools
	$(Q)tests/integration/run.sh

# The unit tests again under AddressSanitizer and UBSan (leaks too): any finding fails.
SANITIZE := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
sanitize-test:
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(OUTPUT)/sanitize CFLAGS="$(SANITIZE)" \
		LDLIBS="$(LDLIBS) -fsanitize=address,undefined" unit-test

# specprobe itself under AddressSanitizer and UBSan, for running readers on damaged files:
# .output/asan/specprobe (any finding aborts with its report).
ASAN_BIN := $(OUTPUT)/asan/specprobe
asan:
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(OUTPUT)/asan CFLAGS="$(SANITIZE)" \
		LDLIBS="$(LDLIBS) -fsanitize=address,undefined" $(ASAN_BIN)

$(OUTPUT)/specprobe: $(USER_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

test: unit-test sanitize-test integration-test fuzz-test

# Trace the bundled simulated GPU server (root).
demo: all
	$(Q)./specprobe demo

# The binary, the simulated GPU for the demo (found in ../lib/specprobe beside the binary)
# and the man page.
install: all
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 0755 specprobe $(DESTDIR)$(PREFIX)/bin/specprobe
	$(Q)install -d $(DESTDIR)$(PREFIX)/lib/specprobe
	$(Q)cp -P $(OUTPUT)/specsim/libcuda.so* $(OUTPUT)/specsim/libnccl.so* \
		$(OUTPUT)/specsim/specsim-server $(DESTDIR)$(PREFIX)/lib/specprobe/
	$(Q)install -D -m 0644 docs/specprobe.1 $(DESTDIR)$(PREFIX)/share/man/man1/specprobe.1

deps:
	$(Q)if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root (apt-get)" >&2; exit 1; fi
	$(Q)missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else \
		echo "make deps: all $(words $(DEB_PACKAGES)) packages installed"; \
	fi

vmlinux:
	$(call msg,GEN,$(VMLINUX))
	$(Q)mkdir -p vmlinux/$(ARCH_RAW)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX)

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf $(OUTPUT) specprobe specprobe-static

.DELETE_ON_ERROR:
.SECONDARY:
