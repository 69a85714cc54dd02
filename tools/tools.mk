# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Helper programs and look-alike libraries; each tool folder adds its own rules.
TOOLS_TARGETS :=
-include tests/lookalike/lookalike.mk
-include tools/specsim/specsim.mk
-include tools/bench/bench.mk
-include tools/sample/sample.mk
-include tests/pystacks/pystacks.mk

tools: $(TOOLS_TARGETS)

# tools/gpu/cupti_bisect.py's library: the agent's CUPTI steps one by one (GPU hosts only).
GPU_TOOLS_DIR := $(OUTPUT)/gputools
$(GPU_TOOLS_DIR)/cupti_bisect.so: tools/gpu/cupti_bisect.c user/gpuagent/cuptiload.c \
		user/gpuagent/cuptiload.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(AGENT_CFLAGS) -Iuser/gpuagent -I$(CUDA_INCLUDE) -shared \
		tools/gpu/cupti_bisect.c user/gpuagent/cuptiload.c -ldl -lpthread -o $@
gpu-tools: $(GPU_TOOLS_DIR)/cupti_bisect.so
.PHONY: gpu-tools
