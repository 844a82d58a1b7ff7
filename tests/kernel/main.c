// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel tests, run as root in the guest on the patched kernel:
 * shmem_kernel_test [SEED [RANDOM_OPS]], or shmem_kernel_test --nokmem
 * for the memory cgroup reclaim tests alone, in a boot with
 * cgroup.memory=nokmem.  TAP lines, then "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"

int main(int argc, char **argv)
{
	bool nokmem = argc > 1 && !strcmp(argv[1], "--nokmem");
	unsigned int seed = argc > 1 && !nokmem ? strtoul(argv[1], NULL, 0) : (unsigned int)getpid();
	long ops = argc > 2 ? atol(argv[2]) : 100000;
	const char *large, *plain, *huge, *hugelarge;
	struct mnt mounts[4];
	int n = 4;

	setvbuf(stdout, NULL, _IOLBF, 0);
	large = mount_tmpfs("large", "large_folios");
	plain = mount_tmpfs("default", "");
	huge = mount_tmpfs("huge", "huge=always");
	if (nokmem) {
		memcg_tests(large, plain, huge, NULL, true);
		goto out;
	}
	hugelarge = mount_tmpfs("hugelarge", "huge=always,large_folios");
	mounts[0] = (struct mnt){ plain, "default" };
	mounts[1] = (struct mnt){ huge, "huge=always" };
	mounts[2] = (struct mnt){ large, "large_folios" };
	mounts[3] = (struct mnt){ hugelarge, "huge=always,large_folios" };

	orders_tests(large, plain, huge, mounts, n);
	seek_tests(large, huge);
	punch_tests(large, plain, huge, hugelarge, mounts, n);
	read_splice_tests(large, huge);
	swap_tests(large, plain);
	random_ops_tests(large, plain, huge, seed, ops);
	trace_tests(large, plain, huge, hugelarge);
	seal_tests(large, plain);
	collapse_tests(large, huge);
	eof_zeroing_tests(mounts, n, huge);
	ramp_tests(large, plain);
	memcg_tests(large, plain, huge, hugelarge, false);
	eof_sigbus_tests(large, plain, huge, hugelarge);
	write_source_tests(large, plain, huge);
	/* Last: it remounts large without large_folios */
	mount_option_tests(large);
out:
	test_kernel_log();

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
