# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# libFuzzer harnesses (clang, ASan + UBSan) for every reader of untrusted bytes.
#   make fuzz-test                 each harness for FUZZ_TEST_SECONDS (make test runs this)
#   make fuzz FUZZ_SECONDS=3600    a longer run of each; FUZZERS=elf picks harnesses
# Seeds come from tests/fuzz/seeds.sh; what a run adds stays in .output/fuzz/corpus,
# a crash leaves its input in .output/fuzz/crashes: keep it in tests/fuzz/regress, where
# test_regress reads it with every reader on each build. The recording harnesses mutate the
# fields readers index by (fuzz_fields.h) as well as bytes.
FUZZERS ?= recording analysis top elf ldcache pylines promtext
FUZZ_TEST_SECONDS ?= 30
FUZZ_SECONDS ?= 600
FUZZ_DIR := .output/fuzz
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=all
FUZZ_BINS := $(patsubst %,$(FUZZ_DIR)/bin/fuzz_%,$(FUZZERS))

.PHONY: fuzz fuzz-build fuzz-bins fuzz-seeds fuzz-test

# Built by a make of its own, as sanitize-test is: every object again with clang.
fuzz-build:
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(FUZZ_DIR) CC=$(CLANG) CFLAGS="$(FUZZ_CFLAGS)" \
		fuzz-bins

fuzz-bins: $(FUZZ_BINS)

$(OUTPUT)/bin/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/fuzz_*.h) $(LIB_OBJS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $(INCLUDES) -Itests/fuzz $< $(LIB_OBJS) $(LDLIBS) \
		-o $@

fuzz-seeds: specprobe tools
	$(Q)tests/fuzz/seeds.sh $(FUZZ_DIR)/seeds

# run_fuzzers SECONDS: each harness in turn; the two recording harnesses share one corpus.
# The readers' own output and warnings are closed; libFuzzer and the sanitizers report still.
define run_fuzzers
	$(Q)set -e; for f in $(FUZZERS); do \
		c=$(FUZZ_DIR)/corpus/$$(case $$f in analysis) echo recording;; *) echo $$f;; esac); \
		mkdir -p $$c $(FUZZ_DIR)/crashes; \
		echo "== fuzz_$$f, $(1) s"; \
		$(FUZZ_DIR)/bin/fuzz_$$f -max_total_time=$(1) -timeout=20 \
			-rss_limit_mb=4096 -print_final_stats=1 -close_fd_mask=3 \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$f- $$c \
			$(FUZZ_DIR)/seeds/$$(basename $$c) 2>$(FUZZ_DIR)/$$f.log \
			|| { tail -60 $(FUZZ_DIR)/$$f.log; exit 1; }; \
		grep -E '^stat::(number_of_executed_units|new_units_added)' $(FUZZ_DIR)/$$f.log \
			| tr '\n' ' '; echo; \
	done
endef

fuzz-test: fuzz-build fuzz-seeds
	$(call run_fuzzers,$(FUZZ_TEST_SECONDS))

fuzz: fuzz-build fuzz-seeds
	$(call run_fuzzers,$(FUZZ_SECONDS))
