/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jsonstr.h - JSON strings for bytes that may not be UTF-8.  Every JSON line
 * sluice writes (kernel events, proxy access log, resolver query log) can
 * carry bytes the sandboxed program chose: its process name (comm, set with
 * prctl(PR_SET_NAME)), a server name, a path.  json-c escapes control bytes
 * but copies bytes >= 0x80 as they are, so one such byte makes the whole line
 * unreadable to strict JSON readers (RFC 8259 requires UTF-8): a hostile
 * program could blind the pipeline that reads its own denials.
 */
#ifndef SLUICE_JSONSTR_H
#define SLUICE_JSONSTR_H

#include <stddef.h>

#include <json-c/json.h>

/*
 * Length of the well-formed UTF-8 sequence at s (n bytes available): 1-4,
 * or 0 if s does not start one (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF).
 */
size_t sluice_utf8_seq_len(const unsigned char *s, size_t n);

/*
 * A new json-c string of `s` (NULL: "") in which every byte that does not
 * start a well-formed UTF-8 sequence is replaced by U+FFFD.  Never NULL
 * unless json-c itself runs out of memory.
 */
json_object *sluice_json_string(const char *s);

#endif
