# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The Python stack reader on its own: a uprobe loader that prints named frames.
PYSTACKS_DIR := $(OUTPUT)/pystacks
TOOLS_TARGETS += $(PYSTACKS_DIR)/pystack_probe
PYSTACKS_OBJS := $(LIB_OBJS)

$(PYSTACKS_DIR):
	$(Q)mkdir -p $@

$(PYSTACKS_DIR)/pystack_probe.bpf.o: tests/pystacks/pystack_probe.bpf.c bpf/*.h $(VMLINUX) \
		| $(PYSTACKS_DIR)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH_RAW) -Ibpf \
		-c $< -o $(@:.o=.tmp.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)
	$(Q)rm -f $(@:.o=.tmp.o)

$(PYSTACKS_DIR)/pystack_probe.skel.h: $(PYSTACKS_DIR)/pystack_probe.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(PYSTACKS_DIR)/pystack_probe: tests/pystacks/pystack_probe.c $(PYSTACKS_DIR)/pystack_probe.skel.h \
		$(PYSTACKS_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(PYSTACKS_DIR) $(INCLUDES) $< $(PYSTACKS_OBJS) $(LDLIBS) -o $@

TOOLS_TARGETS += $(PYSTACKS_DIR)/pylines
$(PYSTACKS_DIR)/pylines: tests/pystacks/pylines.c $(PYSTACKS_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $< $(PYSTACKS_OBJS) $(LDLIBS) -o $@
