# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
BENCH_DIR := $(OUTPUT)/bench
TOOLS_TARGETS += $(BENCH_DIR)/callcost

$(BENCH_DIR):
	$(Q)mkdir -p $@

$(BENCH_DIR)/callcost: tools/bench/callcost.c $(LOOKALIKE_DIR)/libnccl.so.2 | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Itests/lookalike $< -L$(LOOKALIKE_DIR) -l:libcuda.so.1 \
		-Wl,-rpath,'$$ORIGIN/../lookalike' -o $@
