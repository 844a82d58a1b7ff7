# shmem-folios: a 6.12 kernel variant with large folios for tmpfs, and the
# tooling to observe them.  `make help` lists the targets.

KERNEL_VERSION := 6.12.118-1~deb12u1
export KERNEL_VERSION

BUILD := build
BIN := $(BUILD)/bin
CC ?= gcc
CFLAGS ?= -O2 -g -Wall -Wextra
VM := tools/vm/run

.PHONY: install all help deps kernel kernel-stock kernel-notrace kernel-events5 kernel-noramp kernel-debug kernel-bench kernel-stock-bench bench bench-default bench-instructions bench-reclaim kernel-deb kernel-deb-config test-install tools vmlinux-h dashboard-pictures tests test test-long test-debug run shell check-series clean xfstests xfstests-report

all: kernel tests

help:
	@echo "make deps        install the Debian packages the project needs"
	@echo "make kernel      build the patched kernel (cached under ~/.cache/shmem-folios)"
	@echo "make kernel-stock  the same pinned source without the series"
	@echo "make kernel-events5  the series before the append ramp (5-argument allocation events)"
	@echo "make kernel-notrace  the series without its tracepoint patches"
	@echo "make kernel-noramp  the series without the append ramp (patch 16) and after"
	@echo "make kernel-debug  the series with KASAN, lockdep and DEBUG_VM"
	@echo "make kernel-bench kernel-stock-bench  the series and stock without DEBUG_VM, for benchmarks"
	@echo "make bench       benchmarks (under emulation), reports in docs/"
	@echo "make bench-default  a default tmpfs mount, series against stock (docs/bench-default-mount.md)"
	@echo "make bench-instructions  instructions per file operation and function, series against stock (docs/bench-instructions.md)"
	@echo "make bench-reclaim  global reclaim with hundreds of memory cgroups, series against stock (docs/bench-reclaim-groups.md)"
	@echo "make dashboard-pictures  the README's pictures of the dashboard panels and live page"
	@echo "make test        build everything, boot the patched kernel, run the tests"
	@echo "make test-long   make test with 1,000,000 random operations (half on each kernel)"
	@echo "make test-debug  the kernel tests and random operations on the debug kernel"
	@echo "make run         build everything, boot the patched kernel, show it at work"
	@echo "make shell       a shell in the guest"
	@echo "make tools       the BPF tools, in build/bin"
	@echo "make live-view-picture  the README's picture of shmemtop's live view"
	@echo "make install     the tools, their man pages, the exporter's systemd unit (PREFIX=/usr/local, DESTDIR, UNITDIR)"
	@echo "make vmlinux-h   regenerate include/vmlinux.h from the patched kernel"
	@echo "make kernel-deb  Debian packages of the patched kernel for real machines, in build/debs"
	@echo "make kernel-deb-config  only configure them (Debian's config + what the series needs)"
	@echo "make test-install  such a package installed into a debootstrapped Debian 12, booted from NVMe and AHCI"
	@echo "make check-series  every patch applies, is checkpatch-clean, builds alone"
	@echo "make xfstests    xfstests on tmpfs, series and stock side by side (hours; not in make test)"
	@echo "make xfstests-report  only merge the parts run so far into build/xfstests/RUN/report.md"

deps:
	@scripts/install-deps

# The build script is quick when its cache entry exists; build/kernel points at it.
kernel: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel patched) && ln -sfn "$$dir" $(BUILD)/kernel

kernel-stock: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel stock) && ln -sfn "$$dir" $(BUILD)/kernel-stock

# The series of an earlier commit, from git: the tools' test on events
# without ramp_orders (scripts/build-kernel says which)
kernel-events5: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel events5) && ln -sfn "$$dir" $(BUILD)/kernel-events5

kernel-notrace: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel notrace) && ln -sfn "$$dir" $(BUILD)/kernel-notrace

kernel-noramp: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel noramp) && ln -sfn "$$dir" $(BUILD)/kernel-noramp

kernel-debug: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel debug) && ln -sfn "$$dir" $(BUILD)/kernel-debug

# The benchmarks' kernels: as users build them, without DEBUG_VM
kernel-bench: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel bench) && ln -sfn "$$dir" $(BUILD)/kernel-bench

kernel-stock-bench: deps
	@mkdir -p $(BUILD)
	@dir=$$(scripts/build-kernel stock-bench) && ln -sfn "$$dir" $(BUILD)/kernel-stock-bench

$(BIN)/shmem_loop: tools/bench/shmem_loop.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $<

$(BIN)/shmem_pft: tools/bench/shmem_pft.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $< -lpthread

$(BIN)/shmem_seek: tools/bench/shmem_seek.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $<

$(BIN)/copy_cost: tools/bench/copy_cost.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $<

$(BIN)/default_ops: tools/bench/default_ops.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $<

bench-default: kernel-bench kernel-stock-bench $(BIN)/default_ops
	tools/bench/default-mount

$(BIN)/count_ops: tools/bench/count_ops.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $<

bench-instructions: kernel-bench kernel-stock-bench $(BIN)/count_ops
	tools/bench/count-instructions

bench-reclaim: kernel-bench kernel-stock-bench
	tools/bench/reclaim-groups

bench: kernel-notrace kernel-noramp kernel-bench kernel-stock-bench $(BIN)/shmem_loop $(BIN)/shmem_pft $(BIN)/shmem_seek $(BIN)/copy_cost $(BIN)/default_ops $(BIN)/count_ops tools
	tools/bench/default-mount
	tools/bench/count-instructions
	tools/bench/reclaim-groups
	tools/bench/tracepoints
	tools/bench/seek
	tools/bench/tracing
	tools/bench/ramp
	tools/bench/suite

# Debian packages for real machines, from Debian's config of the same kernel
# (or KCONFIG=/boot/config-...; LOCALMODCONFIG=1 [LSMOD=file]) merged with
# scripts/kernel-deb.config: see scripts/kernel-deb.  kernel-deb-config only
# configures (quick) and checks the options.
kernel-deb: deps
	@scripts/kernel-deb build

kernel-deb-config: deps
	@scripts/kernel-deb config

# The package for the emulated machine (Debian's config trimmed to the
# modules in tests/deb/lsmod-qemu), dpkg -i into a debootstrapped Debian 12,
# booted from NVMe and from AHCI with e1000e (scripts/test-install);
# TEST_INSTALL_KERNEL=debian tests the harness with Debian's kernel
test-install: deps tools
	@[ "$(TEST_INSTALL_KERNEL)" = debian ] || DEB_DIR=$(BUILD)/test-install-debs \
		LOCALMODCONFIG=1 LSMOD=tests/deb/lsmod-qemu KCONFIG= scripts/kernel-deb build > /dev/null
	DEB_DIR=$(BUILD)/test-install-debs scripts/test-install

# BPF object, its skeleton, the tools (make tools).  include/vmlinux.h is committed;
# `make vmlinux-h` regenerates it from the patched kernel's BTF.
BPF_CLANG ?= clang
BPFTOOL ?= bpftool
GEN := $(BUILD)/gen
TOOLS := shmemtop shmemhist shmemtrace shmem-exporter
# --version prints the commit the tools were built from
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
TOOL_CFLAGS := $(CFLAGS) -Iinclude -Itools/lib -I$(GEN) -DSHMEM_VERSION='"$(VERSION)"'
TOOL_LIBS := -lbpf -lelf -lz -ljson-c
LIB_SRCS := tools/lib/snapshot.c tools/lib/tracer.c tools/lib/cli.c tools/lib/metrics.c \
	tools/lib/maps.c tools/lib/names.c tools/lib/json.c tools/lib/hist.c tools/lib/mounts.c \
	tools/lib/process.c tools/lib/file_series.c

$(BUILD)/bpf/shmem.bpf.o: bpf/shmem.bpf.c include/shmem_map_types.h include/vmlinux.h
	@mkdir -p $(@D)
	$(BPF_CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_x86 -Iinclude -c $< -o $@
	llvm-strip -g $@

$(GEN)/shmem.skel.h: $(BUILD)/bpf/shmem.bpf.o
	@mkdir -p $(@D)
	$(BPFTOOL) gen skeleton $< name shmem_bpf > $@

$(BIN)/shmemtop: tools/shmemtop.c $(LIB_SRCS) tools/lib/shmem_tools.h $(GEN)/shmem.skel.h | $(BIN)
	$(CC) $(TOOL_CFLAGS) -o $@ $< $(LIB_SRCS) $(TOOL_LIBS) -lncursesw

# The exporter's page, with the chart library from npm inlined
web/node_modules/uplot/dist/uPlot.iife.min.js: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch $@

$(GEN)/page.h: web/page.html tools/web-bundle web/node_modules/uplot/dist/uPlot.iife.min.js
	@mkdir -p $(@D)
	tools/web-bundle $(GEN)/page.html
	cd $(GEN) && xxd -i page.html > page.h

$(BIN)/shmem-exporter: tools/shmem-exporter.c $(LIB_SRCS) tools/lib/shmem_tools.h $(GEN)/shmem.skel.h $(GEN)/page.h | $(BIN)
	$(CC) $(TOOL_CFLAGS) -o $@ $< $(LIB_SRCS) $(TOOL_LIBS) -lmicrohttpd -lcap -lpthread

$(BIN)/%: tools/%.c $(LIB_SRCS) tools/lib/shmem_tools.h $(GEN)/shmem.skel.h | $(BIN)
	$(CC) $(TOOL_CFLAGS) -o $@ $< $(LIB_SRCS) $(TOOL_LIBS)

# bpftool from the kernel tree: Debian's 7.1 has no `prog loadall ... autoattach`
$(BIN)/bpftool: | kernel $(BIN)
	@mkdir -p $(BUILD)/bpftool
	$(MAKE) -C $(BUILD)/kernel/src/tools/bpf/bpftool OUTPUT=$(abspath $(BUILD))/bpftool/ -j$$(nproc) >$(BUILD)/bpftool.log 2>&1 || \
		{ tail -20 $(BUILD)/bpftool.log; exit 1; }
	cp $(BUILD)/bpftool/bpftool $@

vmlinux-h: kernel
	$(BPFTOOL) btf dump file $(BUILD)/kernel/vmlinux format c > include/vmlinux.h

# The tools alone: no kernel, no test dependencies (make deps installs the
# build packages; the exporter's page fetches uPlot with npm)
tools: $(addprefix $(BIN)/,$(TOOLS))

# The tools in sbin (they need root or CAP_BPF), their man pages in man8,
# the exporter's systemd unit (naming the sbin it is installed in) where
# systemd looks for units under PREFIX (/usr/local/lib/systemd/system)
PREFIX ?= /usr/local
UNITDIR ?= $(PREFIX)/lib/systemd/system
MANPAGES := $(addprefix man/,$(addsuffix .8,$(TOOLS)))
install: tools
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(UNITDIR)
	install -m 755 $(addprefix $(BIN)/,$(TOOLS)) $(DESTDIR)$(PREFIX)/sbin/
	install -m 644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man8/
	sed 's|@SBINDIR@|$(PREFIX)/sbin|' systemd/shmem-exporter.service.in > $(DESTDIR)$(UNITDIR)/shmem-exporter.service
	chmod 644 $(DESTDIR)$(UNITDIR)/shmem-exporter.service

KERNEL_TESTS := $(wildcard tests/kernel/*.c)
$(BIN)/shmem_kernel_test: $(KERNEL_TESTS) tests/kernel/lib.h | $(BIN)
	$(CC) $(CFLAGS) -o $@ $(KERNEL_TESTS) -lpthread

$(BIN):
	mkdir -p $@

UNIT_SRCS := tests/unit/test_lib.c tests/kernel/lib.c tools/lib/snapshot.c tools/lib/cli.c tools/lib/metrics.c \
	tools/lib/maps.c tools/lib/names.c tools/lib/json.c tools/lib/hist.c tools/lib/mounts.c \
	tools/lib/process.c tools/lib/file_series.c
$(BIN)/shmem_unit_test: $(UNIT_SRCS) tools/lib/shmem_tools.h | $(BIN)
	$(CC) $(TOOL_CFLAGS) -DSHMEM_COUNT_COMPARISONS -Itests/kernel -o $@ $(UNIT_SRCS) $(TOOL_LIBS)

# the tests' workload programs, one source file each
$(BIN)/%: tests/helpers/%.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $<

$(BIN)/shmem_fuzz: tests/fuzz/shmem_fuzz.c | $(BIN)
	$(CC) $(CFLAGS) -o $@ $<

# the kernel tree's bpftool: the tool tests load the object with it too
tests: $(BIN)/shmem_kernel_test $(BIN)/shmem_unit_test $(BIN)/memcg_write $(BIN)/churn $(BIN)/shmem_fuzz tools $(BIN)/bpftool

# The test guests' CPU: QEMU's max without ERMS and FSRM, so that the
# kernel copies and zeroes with rep movsq and rep stosq.  TCG runs a rep
# instruction one iteration (one byte, with rep movsb) per loop, so this
# takes a third off the random operations' time.  Benchmarks and make run
# keep max, the CPU their documented figures were measured on.
test test-long test-debug: export VM_CPU := max,-erms,-fsrm

test: kernel kernel-stock kernel-events5 tests
	tests/run $(SEED)

# Not in CI: 1,000,000 random operations (half on each kernel), and the
# kernel tests' long sequences of 100,000 per mount
test-long: kernel kernel-stock kernel-events5 tests
	FUZZ_OPS=1000000 KERNEL_OPS=100000 tests/run $(SEED)

test-debug: kernel-debug $(BIN)/shmem_kernel_test $(BIN)/shmem_fuzz
	tests/fuzz/debug-run $(SEED)

run: kernel tests
	$(VM) --timeout 1200 --log $(BUILD)/run-console.log -- tools/demo

# The README's picture of shmemtop's live view: known workloads under it
# in the guest, its screen drawn by aha and headless Chromium
.PHONY: live-view-picture
live-view-picture: kernel tools $(BIN)/memcg_write
	tests/tools/live-view-picture
	cp $(BUILD)/live-view.png docs/shmemtop-live-view.png

# The README's pictures of the dashboard panels and of the live page
dashboard-pictures: kernel tests
	EXPORTER_TEST_HOLD=150 tests/exporter/test-exporter
	mkdir -p docs/panels
	cp $(BUILD)/panels/*.png docs/panels/
	cp $(BUILD)/exporter-page.png docs/

shell: kernel tests
	$(VM)

check-series: kernel
	scripts/check-series

# xfstests on tmpfs (tests/xfstests/run says how; hours under emulation,
# not in make test or CI): XFSTESTS=DIR, XFSTESTS_TESTS='generic/001 ...' or
# XFSTESTS_GROUP=quick, XFSTESTS_MOUNT_OPTS='large_folios default',
# XFSTESTS_KERNELS='patched stock' (or NAME=BZIMAGE), XFSTESTS_PART=i/n,
# XFSTESTS_RUN=NAME, XFSTESTS_DOC=docs/xfstests-quick.md, XFSTESTS_EXPUNGE=FILE
XFSTESTS_KERNELS ?= patched stock
XFSTESTS_VARS := XFSTESTS XFSTESTS_TESTS XFSTESTS_GROUP XFSTESTS_MOUNT_OPTS XFSTESTS_PART \
	XFSTESTS_PART_SECONDS XFSTESTS_RUN XFSTESTS_DOC XFSTESTS_MEM XFSTESTS_EXPUNGE
export $(XFSTESTS_VARS)
xfstests: $(if $(filter patched,$(XFSTESTS_KERNELS)),kernel) $(if $(filter stock,$(XFSTESTS_KERNELS)),kernel-stock)
	XFSTESTS_KERNELS='$(XFSTESTS_KERNELS)' tests/xfstests/run

XFSTESTS_RUN_DIR = $(or $(XFSTESTS_RUN),$(XFSTESTS_GROUP),$(if $(XFSTESTS_TESTS),tests,quick))
xfstests-report:
	tests/xfstests/report $(BUILD)/xfstests/$(XFSTESTS_RUN_DIR) $(or $(XFSTESTS_EXPUNGE),tests/xfstests/expunge) \
		> $(BUILD)/xfstests/$(XFSTESTS_RUN_DIR)/report.md
	@echo $(BUILD)/xfstests/$(XFSTESTS_RUN_DIR)/report.md

clean:
	rm -rf $(BUILD)
