/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_event_format.c - libFuzzer target for the kernel event formatter
 * (loader/events.c): arbitrary struct sluice_event bytes through
 * sluice_event_format(), and arbitrary strings through the "events_lost"
 * and lifecycle lines.  Every line must be one JSON object on one line that
 * json-c parses strictly, as valid UTF-8: the comm is chosen by the sandboxed
 * program (prctl(PR_SET_NAME)), so a line that does not parse would let
 * hostile code blind or break whatever reads the events.
 *
 * Input: the first sizeof(struct sluice_event) bytes are the event (short
 * inputs are zero-padded); the rest is split at NUL bytes into the sandbox
 * name, the policy name, the message of a lifecycle line and the mode.
 * byte 0 of the rest, if present, picks the canary pid (bit 0: the event's
 * own pid, so the canary path runs) and whether the real-time offset is a
 * realistic one (bit 1 clear) or the extreme values (bit 1 set).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fuzz_util.h"

#include "events.h"
#include "evlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse `line` strictly as one JSON object (UTF-8 validated); abort if it
 * is not, or if it holds a raw newline. */
static void must_parse(const char *line, int n, const char *must_have)
{
	json_object *o, *v;

	if (n < 0)
		return; /* did not fit: the caller drops it, nothing half-written */
	o = fuzz_json_line(line, (size_t)n);
	if (must_have && !json_object_object_get_ex(o, must_have, &v))
		abort();
	if (!json_object_object_get_ex(o, "@timestamp", &v) || !json_object_is_type(v, json_type_string))
		abort();
	json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sluice_event e;
	struct sluice_event_meta m;
	const uint8_t *p, *end = data + size;
	char *sandbox, *policy, *message, *mode, buf[2048], small[64];
	uint8_t ctl = 0;
	int n;

	memset(&e, 0, sizeof(e));
	memcpy(&e, data, size < sizeof(e) ? size : sizeof(e));
	p = size > sizeof(e) ? data + sizeof(e) : end;
	if (p < end)
		ctl = *p++;
	sandbox = fuzz_piece(&p, end);
	policy = fuzz_piece(&p, end);
	message = fuzz_piece(&p, end);
	mode = fuzz_piece(&p, end);

	memset(&m, 0, sizeof(m));
	m.sandbox = sandbox ? sandbox : "fuzz";
	m.policy_name = policy ? policy : "fuzz-policy";
	m.policy_digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	m.mode = mode;
	m.canary_pid = (ctl & 1) ? e.pid : 0;
	if (ctl & 2)
		m.boot_to_real_ns = (ctl & 4) ? INT64_MAX : INT64_MIN;
	else
		m.boot_to_real_ns = 1764483899LL * 1000000000LL; /* 2025-11-30 */

	n = sluice_event_format(&e, &m, buf, sizeof(buf));
	must_parse(buf, n, "event.reason");
	/* a buffer too small must say so, never write a cut line */
	n = sluice_event_format(&e, &m, small, sizeof(small));
	if (n >= 0)
		must_parse(small, n, "event.reason");

	/* the writer: the envelope (hostile sandbox and policy names) and a
	 * lifecycle line (hostile message), each line strict JSON */
	{
		static int fd = -1;
		static struct sluice_evlog w;
		struct sluice_envelope env;
		char *text, *line, *nl;
		off_t len;

		if (fd < 0)
			fd = memfd_create("fuzz", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
			abort();
		sluice_envelope_of(&m, &env);
		sluice_evlog_init(&w, fd, "memfd", "fuzz", &env);
		sluice_event_fields(sluice_evlog_begin(&w, SLUICE_DS_KERNEL, sluice_event_real_ns(&e, &m)), &e, &m);
		if (sluice_evlog_commit(&w) < 0 || sluice_lifecycle_write(&w, "sandbox-stop", message) < 0)
			abort();
		len = lseek(fd, 0, SEEK_END);
		text = malloc((size_t)len + 1);
		if (!text || pread(fd, text, (size_t)len, 0) != len)
			abort();
		text[len] = 0;
		for (line = text; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = 0;
			must_parse(line, (int)(nl - line), "event.action");
		}
		if (*line)
			abort();   /* a line without its newline */
		free(text);
	}

	(void)sluice_reason_name(e.reason);
	(void)sluice_hook_name(e.hook);
	free(sandbox);
	free(policy);
	free(message);
	free(mode);
	return 0;
}
