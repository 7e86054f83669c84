/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ocsf.h - sluice's event lines in the Open Cybersecurity Schema Framework
 * (OCSF, https://schema.ocsf.io, version SLUICE_OCSF_VERSION), derived from
 * the one writer's ECS lines (evlog.h; docs/events.md, "OCSF"):
 *
 *   kernel denials, CONNECT and TLS tunnels  4001 Network Activity
 *   the proxy's HTTP requests                4002 HTTP Activity
 *   the resolver's queries                   4003 DNS Activity
 *   lifecycle lines                          6002 Application Lifecycle
 *
 * with the base event's required attributes (activity_id, category_uid,
 * class_uid, type_uid, severity_id, time, metadata.product,
 * metadata.version), the Security Control profile's action_id and
 * disposition_id, and every ECS field not mapped kept under `unmapped`
 * (its ECS name as the key), so no fact of the ECS line is lost.
 */
#ifndef SLUICE_OCSF_H
#define SLUICE_OCSF_H

#include <stddef.h>

#define SLUICE_OCSF_VERSION "1.3.0"

/*
 * Convert one ECS line (a JSON object, `len` bytes, no newline needed) into
 * one OCSF event: a NUL-terminated JSON object in out (cap bytes).  When it
 * would not fit, `unmapped` is left out and "unmapped":{"sluice.truncated":
 * true} written instead.  Returns the length written (no newline), or -1
 * when the line is not a JSON object or out is too small even so.
 */
long sluice_ocsf_convert(const char *line, size_t len, char *out, size_t cap);

#endif
