# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Look-alike libraries for the capture tests. The flags keep push %rbp; mov %rsp,%rbp
# first in every function (clang; gcc 12 drops it in leaf functions), as in the real driver: the kernel emulates it instead of
# single-stepping.
LOOKALIKE_DIR := $(OUTPUT)/lookalike
PROLOGUE_CFLAGS := -O2 -fPIC -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
LOOKALIKE_TARGETS := $(LOOKALIKE_DIR)/libcuda.so.1 $(LOOKALIKE_DIR)/libnccl.so.2 \
	$(LOOKALIKE_DIR)/caller $(LOOKALIKE_DIR)/loader $(LOOKALIKE_DIR)/sites
TOOLS_TARGETS += $(LOOKALIKE_TARGETS)

$(LOOKALIKE_DIR):
	$(Q)mkdir -p $@

$(LOOKALIKE_DIR)/libcuda.so.1: tests/lookalike/cuda.c tests/lookalike/lookalike.h | $(LOOKALIKE_DIR)
	$(call msg,LIB,$@)
	$(Q)$(CLANG) $(WARN) $(PROLOGUE_CFLAGS) -shared -Wl,-soname,libcuda.so.1 $< -lpthread -o $@

$(LOOKALIKE_DIR)/libnccl.so.2: tests/lookalike/nccl.c tests/lookalike/lookalike.h $(LOOKALIKE_DIR)/libcuda.so.1
	$(call msg,LIB,$@)
	$(Q)$(CLANG) $(WARN) $(PROLOGUE_CFLAGS) -shared -Wl,-soname,libnccl.so.2 $< \
		-L$(LOOKALIKE_DIR) -l:libcuda.so.1 -o $@

$(LOOKALIKE_DIR)/caller: tests/lookalike/caller.c tests/lookalike/lookalike.h $(LOOKALIKE_DIR)/libnccl.so.2
	$(call msg,CC,$@)
	$(Q)$(CC) $(WARN) -O2 -g $< -L$(LOOKALIKE_DIR) -l:libnccl.so.2 -l:libcuda.so.1 \
		-Wl,-rpath,'$$ORIGIN' -lpthread -o $@

# Maps no CUDA library at start: it dlopens one from a path given at run time.
$(LOOKALIKE_DIR)/loader: tests/lookalike/loader.c tests/lookalike/lookalike.h | $(LOOKALIKE_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WARN) -O2 -g $< -ldl -o $@

# Call sites the tests know by name: frame pointers, so the kernel walks the stack.
$(LOOKALIKE_DIR)/sites: tests/lookalike/sites.c tests/lookalike/lookalike.h \
		$(LOOKALIKE_DIR)/libcuda.so.1
	$(call msg,CC,$@)
	$(Q)$(CC) $(WARN) -O1 -g -fno-omit-frame-pointer $< -L$(LOOKALIKE_DIR) -l:libcuda.so.1 \
		-Wl,-rpath,'$$ORIGIN' -o $@
