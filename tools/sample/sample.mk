# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# sample_cut: a full recording cut into --sample windows, for tests of the sampled mode.
SAMPLE_DIR := $(OUTPUT)/sample
TOOLS_TARGETS += $(SAMPLE_DIR)/sample_cut
# the reader and writer and what they call, nothing of the tracer
SAMPLE_CUT_OBJS := $(addprefix $(OUTPUT)/user/,recording/tracefile.o recording/catalog.o \
	recording/callstack.o recording/symtab.o util/hmap.o util/parse.o util/outfile.o \
	util/safepath.o util/log.o util/elfnote.o)

$(SAMPLE_DIR):
	$(Q)mkdir -p $@

$(SAMPLE_DIR)/sample_cut: tools/sample/sample_cut.c $(SAMPLE_CUT_OBJS) | $(SAMPLE_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $< $(SAMPLE_CUT_OBJS) -lelf -o $@
