# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The simulated GPU: look-alike libcuda.so.1 and libnccl.so.2 and specsim-server.
# Included from tools/tools.mk; also works alone: make -f tools/specsim/specsim.mk
OUTPUT ?= .output
CC ?= cc
ifeq ($(origin msg),undefined)
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

SPECSIM_SRC := tools/specsim
SPECSIM_DIR := $(OUTPUT)/specsim
SPECSIM_CUDA_SRCS := $(addprefix $(SPECSIM_SRC)/,sim_stream.c sim_exec.c sim_graph.c \
	sim_activity.c sim_mem.c sim_names.c cuda_ctx.c cuda_launch.c cuda_mem.c cuda_more.c \
	cuda_procaddr.c)
SPECSIM_NCCL_SRCS := $(addprefix $(SPECSIM_SRC)/,nccl.c nccl_comm.c nccl_shm.c)
SPECSIM_SERVER_SRCS := $(addprefix $(SPECSIM_SRC)/,server.c options.c launcher.c rank.c \
	setup.c graphs.c loop.c bounds.c plants.c torch.c eager.c exercise.c exercise_nccl.c truth.c \
	metrics_serve.c)
SPECSIM_HDRS := $(wildcard $(SPECSIM_SRC)/*.h)

SPECSIM_WARN := -Wall -Wextra -Wno-unused-parameter
# Entry points must start with push %rbp; mov %rsp,%rbp (entry.h forces the frame;
# gcc also needs its scheduler kept out of the prologue). check-prologue verifies.
ifeq ($(shell $(CC) --version 2>/dev/null | grep -c clang),0)
SPECSIM_PROLOGUE := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-shrink-wrap \
	-fno-schedule-insns2 -fno-ipa-icf -fcf-protection=none
else
SPECSIM_PROLOGUE := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fcf-protection=none
endif
SPECSIM_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g $(SPECSIM_WARN)
SPECSIM_LIB_CFLAGS := $(SPECSIM_CFLAGS) -fPIC -fvisibility=hidden $(SPECSIM_PROLOGUE)

SPECSIM_TARGETS := $(SPECSIM_DIR)/libcuda.so.1 $(SPECSIM_DIR)/libnccl.so.2 \
	$(SPECSIM_DIR)/libcupti.so.13 $(SPECSIM_DIR)/prologue.ok $(SPECSIM_DIR)/specsim-server \
	$(SPECSIM_DIR)/specsim-simtest $(SPECSIM_DIR)/specsim-cupti-client \
	$(SPECSIM_DIR)/specsim-cupti-agent.so
# where NVIDIA's CUPTI headers are installed, cupti_abi.h is checked against them
SPECSIM_CUPTI_INC ?= /usr/local/cuda/include
ifneq ($(wildcard $(SPECSIM_CUPTI_INC)/cupti.h),)
SPECSIM_TARGETS += $(SPECSIM_DIR)/cupti_abi.ok
endif
TOOLS_TARGETS += $(SPECSIM_TARGETS)

.PHONY: specsim specsim-selftest
specsim: $(SPECSIM_TARGETS)

specsim-selftest: specsim
	$(Q)$(SPECSIM_SRC)/selftest.sh

$(SPECSIM_DIR):
	$(Q)mkdir -p $@

# libcuda.so / libnccl.so links let programs link with plain -lcuda -lnccl
$(SPECSIM_DIR)/libcuda.so.1: $(SPECSIM_CUDA_SRCS) $(SPECSIM_HDRS) | $(SPECSIM_DIR)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(SPECSIM_LIB_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -Wl,-z,defs \
		$(SPECSIM_CUDA_SRCS) -lpthread -ldl -o $@
	$(Q)ln -sf libcuda.so.1 $(SPECSIM_DIR)/libcuda.so

$(SPECSIM_DIR)/libnccl.so.2: $(SPECSIM_NCCL_SRCS) $(SPECSIM_HDRS) $(SPECSIM_DIR)/libcuda.so.1
	$(call msg,LIB,$@)
	$(Q)$(CC) $(SPECSIM_LIB_CFLAGS) -shared -Wl,-soname,libnccl.so.2 -Wl,-z,defs \
		$(SPECSIM_NCCL_SRCS) -L$(SPECSIM_DIR) -lcuda -lpthread -lrt -o $@
	$(Q)ln -sf libnccl.so.2 $(SPECSIM_DIR)/libnccl.so

# libcupti.so.13 is what CUDA 13 installs; libcupti.so for -lcupti
$(SPECSIM_DIR)/libcupti.so.13: $(SPECSIM_SRC)/cupti.c $(SPECSIM_HDRS) $(SPECSIM_DIR)/libcuda.so.1
	$(call msg,LIB,$@)
	$(Q)$(CC) $(SPECSIM_LIB_CFLAGS) -shared -Wl,-soname,libcupti.so.13 -Wl,-z,defs \
		$< -L$(SPECSIM_DIR) -lcuda -Wl,-rpath,'$$ORIGIN' -lpthread -o $@
	$(Q)ln -sf libcupti.so.13 $(SPECSIM_DIR)/libcupti.so

$(SPECSIM_DIR)/cupti_abi.ok: $(SPECSIM_SRC)/cupti_abi_check.c $(SPECSIM_SRC)/cupti_abi.h \
			     | $(SPECSIM_DIR)
	$(call msg,CHECK,cupti_abi.h)
	$(Q)$(CC) $(SPECSIM_CFLAGS) -I$(SPECSIM_CUPTI_INC) -fsyntax-only $<
	$(Q)touch $@

SPECSIM_LIBS := $(SPECSIM_DIR)/libcuda.so.1 $(SPECSIM_DIR)/libnccl.so.2 \
	$(SPECSIM_DIR)/libcupti.so.13
# a library that fails the check is removed, so nothing runs on it
$(SPECSIM_DIR)/prologue.ok: $(SPECSIM_LIBS) $(SPECSIM_SRC)/check-prologue
	$(call msg,CHECK,$(SPECSIM_DIR)/lib*.so.*)
	$(Q)$(SPECSIM_SRC)/check-prologue $(SPECSIM_LIBS) || { rm -f $(SPECSIM_LIBS); exit 1; }
	$(Q)touch $@

$(SPECSIM_DIR)/specsim-server: $(SPECSIM_SERVER_SRCS) $(SPECSIM_HDRS) $(SPECSIM_DIR)/prologue.ok
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(SPECSIM_CFLAGS) $(SPECSIM_SERVER_SRCS) -L$(SPECSIM_DIR) -lnccl -lcuda \
		-Wl,-rpath,'$$ORIGIN' -lpthread -lm -o $@

$(SPECSIM_DIR)/specsim-simtest: $(SPECSIM_SRC)/simtest.c $(SPECSIM_HDRS) $(SPECSIM_DIR)/prologue.ok
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(SPECSIM_CFLAGS) $< -L$(SPECSIM_DIR) -lnccl -lcuda -Wl,-rpath,'$$ORIGIN' -o $@

$(SPECSIM_DIR)/specsim-cupti-client: $(SPECSIM_SRC)/cupti_client.c $(SPECSIM_HDRS) \
				     $(SPECSIM_DIR)/prologue.ok
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(SPECSIM_CFLAGS) $< -L$(SPECSIM_DIR) -lcuda -ldl -lpthread \
		-Wl,-rpath,'$$ORIGIN' -o $@

$(SPECSIM_DIR)/specsim-cupti-agent.so: $(SPECSIM_SRC)/cupti_client.c $(SPECSIM_HDRS) \
				       $(SPECSIM_DIR)/libcupti.so.13
	$(call msg,LIB,$@)
	$(Q)$(CC) $(SPECSIM_CFLAGS) -DCUPTI_CLIENT_AGENT -fPIC -shared -fvisibility=hidden $< \
		-ldl -lpthread -Wl,-rpath,'$$ORIGIN' -o $@
