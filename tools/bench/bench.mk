# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
BENCH_DIR := $(OUTPUT)/bench
TOOLS_TARGETS += $(BENCH_DIR)/callcost

$(BENCH_DIR):
	$(Q)mkdir -p $@

$(BENCH_DIR)/callcost: tools/bench/callcost.c $(LOOKALIKE_DIR)/libnccl.so.2 | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Itests/lookalike $< -L$(LOOKALIKE_DIR) -l:libcuda.so.1 \
		-Wl,-rpath,'$$ORIGIN/../lookalike' -o $@

# Each launch timed alone while launch probes go in and out (window_cost.sh).
TOOLS_TARGETS += $(BENCH_DIR)/launchlat

$(BENCH_DIR)/launchlat: tools/bench/launchlat.c $(LOOKALIKE_DIR)/libnccl.so.2 | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Itests/lookalike $< -L$(LOOKALIKE_DIR) -l:libcuda.so.1 \
		-Wl,-rpath,'$$ORIGIN/../lookalike' -o $@

# Where a probe hit's time goes: a ladder of programs beside specprobe's own (hitcost.c).
TOOLS_TARGETS += $(BENCH_DIR)/hitcost
HITCOST_OBJS := $(OUTPUT)/user/recording/catalog.o $(OUTPUT)/user/capture/calibrate.o \
	$(OUTPUT)/user/capture/multilink.o
HITCOST_INC := -I$(BENCH_DIR) -I$(OUTPUT) -Ibpf -Iuser/capture -Iuser/recording

$(BENCH_DIR)/hitcost.bpf.o: tools/bench/hitcost.bpf.c bpf/specprobe.h $(VMLINUX) | $(BENCH_DIR)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH_RAW) -Ibpf \
		-c $< -o $(@:.o=.tmp.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)
	$(Q)rm -f $(@:.o=.tmp.o)

$(BENCH_DIR)/hitcost.skel.h: $(BENCH_DIR)/hitcost.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(BENCH_DIR)/hitcost: tools/bench/hitcost.c $(BENCH_DIR)/hitcost.skel.h $(OUTPUT)/specprobe.skel.h \
		$(HITCOST_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(HITCOST_INC) $< $(HITCOST_OBJS) $(LDLIBS) -lpthread -o $@

# For GPU hosts, carried beside specprobe-static.
$(BENCH_DIR)/hitcost-static: tools/bench/hitcost.c $(BENCH_DIR)/hitcost.skel.h \
		$(OUTPUT)/specprobe.skel.h $(HITCOST_OBJS)
	$(call msg,STATIC,$@)
	$(Q)$(CC) $(CFLAGS) -static $(HITCOST_INC) $< $(HITCOST_OBJS) $(STATIC_LDLIBS) -lpthread -o $@

# The trap alone at specprobe's entry points, as an arm of gpu_ab.sh (trapfloor.c).
TOOLS_TARGETS += $(BENCH_DIR)/trapfloor
TRAPFLOOR_INC := -I$(BENCH_DIR) $(INCLUDES)

$(BENCH_DIR)/trapfloor: tools/bench/trapfloor.c $(BENCH_DIR)/hitcost.skel.h $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(TRAPFLOOR_INC) $< $(LIB_OBJS) $(LDLIBS) -lpthread -o $@

$(BENCH_DIR)/trapfloor-static: tools/bench/trapfloor.c $(BENCH_DIR)/hitcost.skel.h $(LIB_OBJS)
	$(call msg,STATIC,$@)
	$(Q)$(CC) $(CFLAGS) -static $(TRAPFLOOR_INC) $< $(LIB_OBJS) $(STATIC_LDLIBS) -lpthread -o $@

# Flips a traced pid's bit under a running specprobe: its own work against the trap (onoff.c).
TOOLS_TARGETS += $(BENCH_DIR)/onoff

$(BENCH_DIR)/onoff: tools/bench/onoff.c bpf/specprobe.h | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Ibpf $< $(LDLIBS) -o $@

$(BENCH_DIR)/onoff-static: tools/bench/onoff.c bpf/specprobe.h | $(BENCH_DIR)
	$(call msg,STATIC,$@)
	$(Q)$(CC) $(CFLAGS) -static -Ibpf $< $(STATIC_LDLIBS) -o $@
