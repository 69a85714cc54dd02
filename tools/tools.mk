# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Helper programs and look-alike libraries; each tool folder adds its own rules.
TOOLS_TARGETS :=
-include tests/lookalike/lookalike.mk
-include tools/specsim/specsim.mk
-include tools/bench/bench.mk
-include tests/pystacks/pystacks.mk

tools: $(TOOLS_TARGETS)
