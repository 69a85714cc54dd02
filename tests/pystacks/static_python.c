// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A python with the interpreter linked in (libpython3.X.a, symbols exported for
 * extension modules), as python-build-standalone ships it: _PyRuntime lies in the
 * executable, not in a libpython.
 */
#include <Python.h>

int main(int argc, char **argv)
{
	return Py_BytesMain(argc, argv);
}
