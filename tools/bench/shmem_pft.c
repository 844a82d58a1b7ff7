// SPDX-License-Identifier: GPL-2.0
/*
 * shmem_pft THREADS MIB: page-fault throughput on anonymous shared memory,
 * after pft (the experiment of the mTHP shmem series' cover letter).  One
 * MAP_SHARED | MAP_ANONYMOUS region of MIB per thread; each thread writes
 * one byte per 4K page of its region, timed from a common start.
 * Prints "PAGES_PER_SECOND FAULTS": 4K pages touched per second over all
 * threads, and the page faults taken (fewer with larger folios).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#define PAGE 4096L

static pthread_barrier_t start;
static long pages_per_thread;
static char *region;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *toucher(void *arg)
{
	char *p = region + (long)arg * pages_per_thread * PAGE;

	pthread_barrier_wait(&start);
	for (long i = 0; i < pages_per_thread; i++)
		p[i * PAGE] = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = argc == 3 ? atol(argv[1]) : 0;
	long mib = argc == 3 ? atol(argv[2]) : 0;
	pthread_t tid[64];
	struct rusage ru0, ru1;
	double t0, t1;

	if (threads < 1 || threads > 64 || mib < 1) {
		fprintf(stderr, "usage: shmem_pft THREADS(1-64) MIB\n");
		return 2;
	}
	pages_per_thread = mib * 256;
	region = mmap(NULL, threads * pages_per_thread * PAGE, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pthread_barrier_init(&start, NULL, threads + 1);
	for (long i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, toucher, (void *)i);
	getrusage(RUSAGE_SELF, &ru0);
	pthread_barrier_wait(&start);
	t0 = now();
	for (long i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	t1 = now();
	getrusage(RUSAGE_SELF, &ru1);
	printf("%.0f %ld\n", threads * pages_per_thread / (t1 - t0),
	       ru1.ru_minflt - ru0.ru_minflt);
	return 0;
}
