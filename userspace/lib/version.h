/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * version.h - the one place the sluice version is written (debian/changelog
 * must agree: tests/integration/test_cli.py checks it).
 */
#ifndef SLUICE_VERSION_H
#define SLUICE_VERSION_H

#include <stdio.h>

#define SLUICE_VERSION "0.1.0"

/* Print "PROG v0.1.0\nusing libbpf v1.1\n" (the libbpf the binary runs
 * with, libbpf_version_string()) to f: the first lines of every binary's
 * -V/--version. */
void sluice_version_print(FILE *f, const char *prog);

#endif
