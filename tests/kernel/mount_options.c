// SPDX-License-Identifier: GPL-2.0
/*
 * The large_folios mount option: /proc/mounts shows it, a remount with
 * nolarge_folios turns it off and the option is gone from /proc/mounts;
 * large_folios=1 and an unknown option are refused with EINVAL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "lib.h"

/* It turns large_folios off on the mount: see main() for what runs after it. */
void mount_option_tests(const char *dir)
{
	char line[512];
	bool shown = false;
	FILE *f = fopen("/proc/mounts", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, dir) && strstr(line, "large_folios"))
			shown = true;
	if (f)
		fclose(f);
	check(shown, "/proc/mounts shows large_folios");
	check(mount("tmpfs", dir, "tmpfs", MS_REMOUNT, "nolarge_folios") == 0, "remount nolarge_folios");
	f = fopen("/proc/mounts", "r");
	shown = false;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, dir) && strstr(line, "large_folios"))
			shown = true;
	if (f)
		fclose(f);
	check(!shown, "the option is gone from /proc/mounts");
	errno = 0;
	check(mount("tmpfs", dir, "tmpfs", 0, "large_folios=1") < 0 && errno == EINVAL,
	      "large_folios=1 is refused with EINVAL");
	errno = 0;
	check(mount("tmpfs", dir, "tmpfs", 0, "large_folioz") < 0 && errno == EINVAL,
	      "an unknown option is refused with EINVAL");
}
