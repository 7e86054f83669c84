/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_sign.c - `sluice policy sign` and `sluice policy verify`: the merge
 * step and the CI check of signed policies (policy_sig.h, docs/policy.md
 * "Change control").
 */
#include "cmd_sign.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "policy.h"
#include "policy_sig.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice policy sign [--json] --key KEY POLICY.yaml...\n"
		"       sluice policy verify [--json] --allowed-signers FILE POLICY.yaml...\n"
		"\n"
		"sign    sign each policy's canonical digest with the SSH key KEY (ssh-keygen -Y sign,\n"
		"        namespace " SLUICE_SIG_NAMESPACE "); writes POLICY.yaml.sig beside it.  What is signed is\n"
		"        \"" "sluice-policy sha256:DIGEST" "\": comments and layout may change afterwards, any\n"
		"        change of meaning (or of name or a why) needs a new signature.\n"
		"verify  check POLICY.yaml.sig against an OpenSSH allowed-signers file, as\n"
		"        `sluice run --allowed-signers` and the daemon do; prints the signer.\n"
		"\n"
		"-j, --json: one JSON document, {\"ok\", \"files\": [{\"file\", \"ok\", \"sha256\",\n"
		"\"signature\" (sign) or \"signer\", \"key\" (verify), or \"error\"}]}.\n"
		"\n"
		"Exit status: 0 all signed / verified, 2 any error (file:line: message).\n"
		"\n"
		"examples:\n"
		"  sluice policy sign --key ~/.ssh/id_ed25519 policies/job.yaml\n"
		"  sluice policy verify --allowed-signers /etc/sluice/allowed_signers policies/job.yaml\n");
}

/* One file's outcome into fo (none without -j): "ok", and "sha256" or
 * "error". */
static void file_result(json_object *fo, bool ok, const char *digest, const char *error)
{
	if (!fo)
		return;
	json_object_object_add(fo, "ok", json_object_new_boolean(ok));
	if (digest)
		json_object_object_add(fo, "sha256", json_object_new_string(digest));
	if (error)
		json_object_object_add(fo, "error", json_object_new_string(error));
}

int cmd_policy_sign(int argc, char **argv)
{
	const char *key = NULL, *signers_path = NULL;
	bool sign = strcmp(argv[0], "sign") == 0;
	static const struct option longopts[] = {
		{ "key", required_argument, NULL, 'k' }, { "allowed-signers", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },      { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sluice_signers signers;
	int n = 0, rc = 0, c;
	char msg[1024];
	json_object *files = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hj", longopts, NULL)) != -1) {
		bool bad = false;

		switch (c) {
		case 'h': usage(stdout); return 0;
		case 'j': sluice_cli_set_json(); break;
		case 'k': key = optarg; bad = !sign; break;              /* verify takes no key */
		case 'a': signers_path = optarg; bad = sign; break;      /* sign no allowed-signers file */
		default: bad = true; break;
		}
		if (bad) {   /* argv[optind - 1]: the unknown option, or the one without its value */
			sluice_cli_error("sluice policy %s: unknown option or missing value '%s'", argv[0],
					 c == 'k' ? "--key" : c == 'a' ? "--allowed-signers" : argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		argv[++n] = argv[i];   /* compact the files to argv[1..n] */
	if (n == 0 || (sign && !key) || (!sign && !signers_path)) {
		sluice_cli_error("sluice policy %s: need %s and at least one POLICY", argv[0],
			sign ? "--key KEY" : "--allowed-signers FILE");
		usage(stderr);
		return 2;
	}
	if (!sign && sluice_signers_load(signers_path, &signers, msg, sizeof(msg)) < 0) {
		sluice_cli_error("%s", msg);
		return 2;
	}
	if (sluice_cli_json())
		files = json_object_new_array();
	for (int i = 1; i <= n; i++) {
		char digest[SLUICE_DIGEST_HEX_LEN + 1], sigpath[4200];
		json_object *fo = files ? json_object_new_object() : NULL;

		if (fo) {
			json_object_object_add(fo, "file", json_object_new_string(argv[i]));
			json_object_array_add(files, fo);
		}
		sluice_policy_sig_path(argv[i], sigpath, sizeof(sigpath));
		if (sign) {
			if (sluice_policy_sign(key, argv[i], digest, msg, sizeof(msg)) < 0) {
				sluice_cli_error("%s", msg);
				file_result(fo, false, NULL, msg);
				rc = 2;
				continue;
			}
			if (!fo) {
				printf("signed  %s  sha256 %s  -> %s\n", argv[i], digest, sigpath);
				continue;
			}
			file_result(fo, true, digest, NULL);
			json_object_object_add(fo, "signature", json_object_new_string(sigpath));
		} else {
			struct sluice_policy *p = NULL;
			struct sluice_signer who;

			if (sluice_policy_load_checked(argv[i], &signers, &p, &who, NULL, NULL, NULL, NULL, msg,
						       sizeof(msg)) < 0) {
				sluice_cli_error("%s", msg);
				if (!fo)
					printf("refused %s\n", argv[i]);
				file_result(fo, false, NULL, msg);
				rc = 2;
				continue;
			}
			if (!fo) {
				printf("ok      %s  sha256 %s  signed by %s (%s)\n", argv[i], p->digest, who.principal,
				       who.key[0] ? who.key : "key not reported");
			} else {
				file_result(fo, true, p->digest, NULL);
				json_object_object_add(fo, "signer", json_object_new_string(who.principal));
				json_object_object_add(fo, "key", who.key[0] ? json_object_new_string(who.key) : NULL);
			}
			sluice_policy_free(p);
		}
	}
	if (files) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "ok", json_object_new_boolean(rc == 0));
		json_object_object_add(o, "files", files);
		sluice_cli_json_print(o);
		json_object_put(o);
	}
	if (!sign)
		sluice_signers_free(&signers);
	return rc;
}
