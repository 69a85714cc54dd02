#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The simulated GPU's own checks: prologues, blocking rules, ranks, ground truth.
exec "$(dirname "$0")/../../tools/specsim/selftest.sh"
